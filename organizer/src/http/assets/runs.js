// The runs page reloads to follow its runs, but not while runs are being
// ticked to compare.
setTimeout(() => {
  if (!document.querySelector('input[name=run]:checked')) location.reload();
}, 3000);
