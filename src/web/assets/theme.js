// The theme chosen with the header's toggle (site.js stores it), set on <html> before the first paint: this script
// loads without defer, ahead of the stylesheets, so a page never shows the other theme first. No choice: the system's.
try {
  const theme = localStorage.getItem('imghost.theme')
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme
} catch {
  // Storage disabled: the system's theme.
}
