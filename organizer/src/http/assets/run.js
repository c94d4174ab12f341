// A run's page kept live from its event stream (/runs/ID/events): the
// summary line (state, progress, best, elapsed) on every event; the chart
// redrawn at most every 300 ms; the best parameters and the analysis
// swapped in from the page itself at most every 3 s, so nothing the page
// shows stays as it was when it loaded. Elapsed time advances between
// events while the run runs.
(() => {
  const id = document.currentScript.dataset.run;
  const byId = (name) => document.getElementById(name);
  const es = new EventSource('/runs/' + id + '/events');
  let chartDue = false;
  let partsDue = false;
  let elapsed = null;
  let running = false;
  const showElapsed = () => {
    if (elapsed === null) return;
    const seconds = running ? elapsed.seconds + (Date.now() - elapsed.at) / 1000 : elapsed.seconds;
    byId('elapsed').textContent = Math.round(seconds) + ' s';
  };
  const ticker = setInterval(showElapsed, 1000);
  const swapParts = () => {
    fetch('/runs/' + id)
      .then((r) => r.text())
      .then((text) => {
        const fresh = new DOMParser().parseFromString(text, 'text/html');
        for (const part of ['best-parameters', 'analysis']) {
          const now = byId(part);
          const next = fresh.getElementById(part);
          if (now && next) now.replaceWith(document.importNode(next, true));
        }
        window.yamorSwapped = (window.yamorSwapped || 0) + 1;
      })
      // Seen by the browser test; the next event tries again.
      .catch((e) => { window.yamorLiveError = String(e); });
  };
  es.onmessage = (e) => {
    const d = JSON.parse(e.data);
    byId('state').textContent = d.state;
    byId('progress').textContent = d.progress;
    byId('bestvalue').textContent = d.best;
    running = d.state === 'running';
    elapsed = { seconds: d.elapsed_s, at: Date.now() };
    showElapsed();
    if (!chartDue) {
      chartDue = true;
      setTimeout(() => {
        chartDue = false;
        fetch('/runs/' + id + '/chart.svg')
          .then((r) => r.text())
          .then((t) => { byId('chartbox').innerHTML = t; });
      }, 300);
    }
    if (!partsDue) {
      partsDue = true;
      setTimeout(() => { partsDue = false; swapParts(); }, running ? 3000 : 0);
    }
    if (!running) {
      es.close();
      clearInterval(ticker);
    }
  };
})();
