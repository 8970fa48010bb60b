/**
 * The dashboard's one page. Its scripts and styles are served beside it (no CDN: it works offline). The
 * graphs' script comes before app.js: app.js routes as soon as its session arrives, which may be before a
 * later script has loaded; the graphs' script only defines functions, called once app.js routes.
 */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>warren</title>
<link rel="stylesheet" href="vendor/uplot.css">
<link rel="stylesheet" href="app.css">
</head>
<body>
<header>
  <strong class="brand">warren</strong>
  <nav>
    <a href="#/">Overview</a>
    <a href="#/graphs">Graphs</a>
    <a href="#/dead">Dead letters</a>
    <a href="#/job">Find a job</a>
  </nav>
  <span id="live" class="live">connecting…</span>
  <span id="who" class="who"></span>
</header>
<div id="notice" role="alert" data-testid="notice" hidden></div>
<div id="flash" role="status" hidden></div>
<main id="main"></main>
<script src="vendor/uplot.js"></script>
<script src="graphs.js"></script>
<script src="app.js"></script>
</body>
</html>
`;
