// The walk replayed in 3-D from /jobs/ID/replay.json: a perspective
// projection of each box's eight corners, faces drawn far to near
// (painter's order) and shaded by their tilt to a light; a ground grid; the
// path of the robot's centre from above. It plays by itself once loaded,
// at the chosen speed; the camera follows the robot and orbits it.
const REPLAY=document.currentScript.dataset.replay;
const scene=document.getElementById('scene'),g=scene.getContext('2d');
const pathc=document.getElementById('path'),pg=pathc.getContext('2d');
const slider=document.getElementById('time'),clock=document.getElementById('clock');
const speed=document.getElementById('speed');
let rec=null,frame=0,playing=false,last=0;
// The camera orbits the robot's centre and follows it: drag to turn it,
// the wheel to come closer.
let yaw=0.7,pitch=0.45,dist=0.9;
const rot=(q,v)=>{const[x,y,z,w]=q,[a,b,c]=v;
 const ix=w*a+y*c-z*b,iy=w*b+z*a-x*c,iz=w*c+x*b-y*a,iw=-x*a-y*b-z*c;
 return[ix*w+iw*-x+iy*-z-iz*-y,iy*w+iw*-y+iz*-x-ix*-z,iz*w+iw*-z+ix*-y-iy*-x]};
const SIGNS=[[-1,-1,-1],[1,-1,-1],[1,1,-1],[-1,1,-1],[-1,-1,1],[1,-1,1],[1,1,1],[-1,1,1]];
const FACES=[[0,1,2,3],[4,5,6,7],[0,1,5,4],[2,3,7,6],[1,2,6,5],[0,3,7,4]];
function centre(f){let x=0,y=0,z=0;for(const b of f){x+=b[0];y+=b[1];z+=b[2]}return[x/f.length,y/f.length,z/f.length]}
function draw(){if(!rec)return;const f=rec.frames[frame],c=centre(f);
 const fl=560;
 const cam=(p)=>{const dx=p[0]-c[0],dy=p[1]-c[1],dz=p[2];
  const x1=Math.cos(yaw)*dx-Math.sin(yaw)*dy,y1=Math.sin(yaw)*dx+Math.cos(yaw)*dy;
  const depth=y1*Math.cos(pitch)-dz*Math.sin(pitch)+dist,up=y1*Math.sin(pitch)+dz*Math.cos(pitch);
  return[320+fl*x1/depth,260-fl*up/depth,depth]};
 g.clearRect(0,0,640,420);g.strokeStyle='#d5dbe1';g.lineWidth=1;
 const gx=Math.round(c[0]*10)/10,gy=Math.round(c[1]*10)/10;
 for(let k=-6;k<=6;k++){for(const[a,b]of[[[gx+k/10,gy-0.6,0],[gx+k/10,gy+0.6,0]],[[gx-0.6,gy+k/10,0],[gx+0.6,gy+k/10,0]]]){
  const p=cam(a),q=cam(b);if(p[2]>0.05&&q[2]>0.05){g.beginPath();g.moveTo(p[0],p[1]);g.lineTo(q[0],q[1]);g.stroke()}}}
 const faces=[];
 f.forEach((b,i)=>{const h=rec.half_extents[i];
  const corners=SIGNS.map(s=>{const r=rot([b[3],b[4],b[5],b[6]],[s[0]*h[0],s[1]*h[1],s[2]*h[2]]);return[b[0]+r[0],b[1]+r[1],b[2]+r[2]]});
  const shown=corners.map(cam);
  for(const face of FACES){const w=face.map(k=>corners[k]);
   const u=[w[1][0]-w[0][0],w[1][1]-w[0][1],w[1][2]-w[0][2]],v=[w[3][0]-w[0][0],w[3][1]-w[0][1],w[3][2]-w[0][2]];
   const n=[u[1]*v[2]-u[2]*v[1],u[2]*v[0]-u[0]*v[2],u[0]*v[1]-u[1]*v[0]],len=Math.hypot(...n)||1;
   const light=Math.abs(n[2]/len)*0.6+Math.abs(n[0]/len)*0.3+0.1;
   faces.push({pts:face.map(k=>shown[k]),depth:face.reduce((s,k)=>s+shown[k][2],0)/4,light,handle:i%2===1})}});
 faces.sort((a,b)=>b.depth-a.depth);
 for(const fc of faces){if(fc.pts.some(p=>p[2]<=0.05))continue;g.beginPath();g.moveTo(fc.pts[0][0],fc.pts[0][1]);
  for(const p of fc.pts.slice(1))g.lineTo(p[0],p[1]);g.closePath();
  const l=Math.round(120+120*fc.light);g.fillStyle=fc.handle?`rgb(${l},${Math.round(l*0.75)},60)`:`rgb(60,${Math.round(l*0.8)},${l})`;
  g.fill();g.strokeStyle='#334';g.stroke()}
 const t=frame*rec.frame_interval,was=rec.recorded_velocity==null?'':` (recorded: ${(rec.recorded_velocity*100).toFixed(2)} cm/s)`;
 clock.textContent=`t = ${t.toFixed(2)} s of ${((rec.frames.length-1)*rec.frame_interval).toFixed(1)} s · ${(rec.velocity*100).toFixed(2)} cm/s measured here${was}`;
 slider.value=frame;drawPath()}
function drawPath(){const cs=rec.frames.map(centre);let lo=[1e9,1e9],hi=[-1e9,-1e9];
 for(const p of cs){lo=[Math.min(lo[0],p[0]),Math.min(lo[1],p[1])];hi=[Math.max(hi[0],p[0]),Math.max(hi[1],p[1])]}
 const span=Math.max(hi[0]-lo[0],hi[1]-lo[1],0.05),s=260/span,ox=20-lo[0]*s,oy=280+lo[1]*s;
 pg.clearRect(0,0,300,300);pg.strokeStyle='#36c';pg.beginPath();
 cs.forEach((p,i)=>{const x=ox+p[0]*s,y=oy-p[1]*s;i?pg.lineTo(x,y):pg.moveTo(x,y)});pg.stroke();
 const now=cs[frame];pg.fillStyle='#c33';pg.beginPath();pg.arc(ox+now[0]*s,oy-now[1]*s,4,0,7);pg.fill();
 pg.fillStyle='#222';pg.fillText(`from above, ${span.toFixed(2)} m across`,8,14)}
function tick(ts){if(playing&&rec){const step=rec.frame_interval*1000/(+speed.value||1);
 if(ts-last>=step){const n=Math.max(1,Math.floor((ts-last)/step));last=ts;frame=(frame+n)%rec.frames.length;window.yamorReplayShown=(window.yamorReplayShown||0)+1;draw()}}requestAnimationFrame(tick)}
const play=document.getElementById('play');
const setPlaying=on=>{playing=on;play.textContent=on?'pause':'play'};
play.onclick=()=>setPlaying(!playing);
let drag=null;
scene.onmousedown=e=>{drag=[e.clientX,e.clientY]};
window.addEventListener('mouseup',()=>{drag=null});
scene.onmousemove=e=>{if(!drag)return;yaw+=(e.clientX-drag[0])*0.01;
 pitch=Math.min(1.4,Math.max(0.05,pitch+(e.clientY-drag[1])*0.01));drag=[e.clientX,e.clientY];draw()};
scene.onwheel=e=>{e.preventDefault();dist=Math.min(4,Math.max(0.3,dist*(e.deltaY>0?1.1:0.9)));draw()};
slider.oninput=()=>{frame=+slider.value;draw()};
fetch(REPLAY).then(r=>r.ok?r.json():r.text().then(t=>Promise.reject(t))).then(r=>{rec=r;slider.max=r.frames.length-1;window.yamorReplayFrames=r.frames.length;draw();setPlaying(true);requestAnimationFrame(tick)})
 .catch(e=>{clock.textContent='cannot replay: '+e;window.yamorReplayError=String(e)});
