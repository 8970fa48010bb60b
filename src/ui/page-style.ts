/** The dashboard's stylesheet: plain CSS, system fonts, light and dark. */
export const PAGE_STYLE = `
:root { --bg: #fff; --fg: #1d2327; --muted: #6b7280; --line: #e5e7eb; --accent: #7c3aed;
  --bad: #b91c1c; --ok: #047857; --warn: #b45309; --head: #f9fafb; }
@media (prefers-color-scheme: dark) { :root { --bg: #111418; --fg: #e5e7eb; --muted: #9ca3af;
  --line: #2d333b; --head: #161b22; --accent: #a78bfa; --bad: #f87171; --ok: #34d399; --warn: #fbbf24; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg);
  color: var(--fg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line);
  background: var(--head); }
.brand { color: var(--accent); font-size: 1.15rem; }
nav a { margin-right: 1rem; color: var(--fg); text-decoration: none; }
nav a:hover { color: var(--accent); }
.live { margin-left: auto; color: var(--muted); font-size: .85rem; }
.live.on::before { content: "● "; color: var(--ok); }
.who { font-size: .85rem; padding: .1rem .5rem; border: 1px solid var(--line); border-radius: 1rem; }
main { padding: 1rem 1.2rem 3rem; max-width: 1300px; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.kept { font-family: ui-monospace, monospace; font-size: .8rem; min-width: 8rem; max-width: 22rem; overflow-wrap: anywhere;
  white-space: pre-wrap; }
a { color: var(--accent); }
.tag { display: inline-block; padding: 0 .45rem; border-radius: .7rem; font-size: .8rem; border: 1px solid; }
.tag.bad { color: var(--bad); } .tag.ok { color: var(--ok); } .tag.warn { color: var(--warn); }
.muted { color: var(--muted); }
button { font: inherit; padding: .25rem .7rem; border: 1px solid var(--line); border-radius: .3rem;
  background: var(--head); color: var(--fg); cursor: pointer; }
button.danger { color: var(--bad); border-color: var(--bad); }
button:disabled { opacity: .45; cursor: not-allowed; }
input, select, textarea { font: inherit; padding: .25rem .4rem; border: 1px solid var(--line); border-radius: .3rem;
  background: var(--bg); color: var(--fg); }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
form.filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
.bar { display: flex; gap: .5rem; align-items: center; margin: .6rem 0; flex-wrap: wrap; }
pre { background: var(--head); border: 1px solid var(--line); padding: .6rem; overflow: auto; border-radius: .3rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dt { color: var(--muted); }
#flash { margin: .6rem 1.2rem 0; padding: .5rem .8rem; border-radius: .3rem; border: 1px solid var(--line); }
#flash.bad { border-color: var(--bad); color: var(--bad); }
#flash.ok { border-color: var(--ok); color: var(--ok); }
figure.graph { margin: 1rem 0 1.6rem; }
figure.graph figcaption { font-weight: 600; margin-bottom: .3rem; }
figure.graph details { margin-top: .3rem; font-size: .85rem; }
.plot { width: 100%; min-height: 200px; }
.uplot, .u-legend { color: var(--fg); font-family: inherit; }
#notice { margin: 0; padding: .55rem 1.2rem; font-weight: 600; color: var(--warn); border-bottom: 2px solid var(--warn);
  background: var(--head); }
`;
