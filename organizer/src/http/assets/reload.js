// The hosts page reloads to follow its hosts.
setTimeout(() => location.reload(), 2000);
