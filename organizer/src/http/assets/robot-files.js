// Reads the chosen robot files in the browser into the start form's hidden
// fields, which post with it: no upload endpoint, no multipart.
for(const[f,n]of[['world','world_xml'],['gait','gait_xml'],['optimize','optimize_xml']])
document.getElementById(f).onchange=e=>{const file=e.target.files[0];if(!file)return;
file.text().then(t=>document.querySelector('textarea[name='+n+']').value=t)};
