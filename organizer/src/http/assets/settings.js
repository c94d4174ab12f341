// Shows the chosen optimizer's settings only (the others are disabled, so
// they do not post).
const pick=document.querySelector('select[name=optimizer]');
const show=()=>document.querySelectorAll('fieldset.settings').forEach(f=>{
const on=f.dataset.optimizer===pick.value;f.hidden=!on;f.disabled=!on});
pick.addEventListener('change',show);show();
