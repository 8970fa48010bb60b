/**
 * The dashboard's graphs page (#/graphs?range=hour&queue=*): plain browser JavaScript like
 * page-script.browser.js, whose helpers (h, api, table, num) it shares as a classic script (loaded before it, called only once it
 * routes).
 * Reads /api/aggregates (JSON, never HTML) and draws four charts with uPlot (vendor/uplot.js, bundled with
 * the package): throughput and failures, wait and run time percentiles, depth and oldest waiting job.
 * Each chart has its data as a table beside it, for screen readers and keyboards; each chart element keeps
 * its uPlot instance as `chart` and its marks as `marks`, so a test reads the series and the lines that
 * were drawn. Marks on the time axis: process starts (dashed), deploys, pauses and resumes (solid,
 * labelled, from the view's `marks`), listed in a table of their own. Colours come from the page's
 * CSS variables, so light and dark mode both read.
 */
// biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), where it is not redundant
'use strict';
/** @type {ReturnType<typeof setTimeout> | undefined} */
let graphsTimer;
const RANGES = ['hour', 'day', 'week'];
/** Charts made but not drawn yet: drawn once they are in the page, where their width is known. */
/** @type {(() => void)[]} */
const pendingDraws = [];

/** Stops the page's refresh (page-script's route calls it on every change of page). */
// biome-ignore lint/correctness/noUnusedVariables: page-script.browser.js calls it (classic scripts share one global scope)
function stopGraphs() {
  clearTimeout(graphsTimer);
  graphsTimer = undefined;
}

/** @param {string} name */
function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/**
 * The page: range and queue pickers, then the charts, refreshed once a bucket (at least every 5 s).
 * @param {URLSearchParams} params
 */
// biome-ignore lint/correctness/noUnusedVariables: page-script.browser.js calls it (classic scripts share one global scope)
function graphsPage(params) {
  const range = RANGES.indexOf(params.get('range') || '') >= 0 ? params.get('range') || 'hour' : 'hour';
  const queue = params.get('queue') || '*';
  const out = h('div', { 'data-testid': 'graphs' }, h('p', { class: 'muted' }, 'loading…'));
  const load = () =>
    api(`api/aggregates?range=${range}`).then(
      (view) => {
        if (location.hash.indexOf('#/graphs') !== 0) return;
        out.replaceChildren.apply(out, graphsOf(view, range, queue));
        pendingDraws.splice(0).forEach((drawChart) => {
          drawChart();
        });
        graphsTimer = setTimeout(load, Math.max(5000, view.bucketMs));
      },
      (e) => out.replaceChildren(h('p', { class: 'tag bad' }, e.message)),
    );
  load();
  return [h('h2', {}, 'Graphs'), out];
}

/** The range and queue pickers (links: the back button and a bookmark keep the view). */
function pickers(view, range, queue) {
  const link = (r, q) => `#/graphs?range=${r}&queue=${encodeURIComponent(q)}`;
  const names = view.series.map((s) => s.queue);
  const choices = RANGES.map((r) =>
    h('a', { href: link(r, queue), class: r === range ? 'tag ok' : 'tag', 'aria-current': r === range }, r),
  );
  return h('div', { class: 'bar' }, [
    h('span', { class: 'muted' }, 'Last'),
    ...choices,
    h('label', {}, [
      h('span', { class: 'muted' }, ' queue '),
      h(
        'select',
        {
          'data-testid': 'graph-queue',
          onchange: (e) => {
            location.hash = link(range, e.target.value);
          },
        },
        names.map((n) => h('option', { value: n, selected: n === queue }, n === '*' ? 'all queues' : n)),
      ),
    ]),
  ]);
}

function graphsOf(view, range, queue) {
  if (!view.isWritten)
    return [
      h(
        'p',
        { class: 'tag warn', 'data-testid': 'graphs-off' },
        'No aggregates yet: no process of this namespace runs with the `aggregates` option (docs: guide/aggregates).',
      ),
    ];
  const series = view.series.find((s) => s.queue === queue) || view.series[0];
  const points = series ? series.points : [];
  const step = view.stepMs >= 3600000 ? `${view.stepMs / 3600000} h` : `${view.stepMs / 1000} s`;
  const facts = h(
    'p',
    { class: 'muted', 'data-testid': 'graphs-source' },
    `Source: the aggregates streams (one record per process per ${view.level}), a point every ${step}; ` +
      `${view.records} records read${view.skipped ? `, ${view.skipped} skipped (untrusted or malformed)` : ''}` +
      `${view.truncated ? ', read cut at its limit' : ''}.`,
  );
  const xs = points.map((p) => p.start / 1000);
  const marks = processStarts(view).concat(recordedMarks(view, queue));
  const pick = (f) => points.map((p) => f(p));
  return [
    pickers(view, range, queue),
    facts,
    marksTable(marks, view),
    chart('throughput', 'Jobs per point: completed, failed attempts, dead-lettered', xs, marks, [
      { label: 'completed', color: '--ok', values: pick((p) => p.completed) },
      { label: 'failed', color: '--bad', values: pick((p) => p.failed) },
      { label: 'dead-lettered', color: '--warn', values: pick((p) => p.deadLettered) },
    ]),
    chart(
      'wait',
      'Wait time, ms (publish or due time to start)',
      xs,
      marks,
      percentiles(pick((p) => p.wait)),
    ),
    chart('run', 'Run time, ms', xs, marks, percentiles(pick((p) => p.run))),
    chart('depth', 'Depth (messages ready) and oldest waiting job, s', xs, marks, [
      { label: 'depth', color: '--accent', values: pick((p) => p.depth) },
      {
        label: 'oldest waiting (s)',
        color: '--warn',
        values: pick((p) => (p.oldestWaitingMs === null ? null : p.oldestWaitingMs / 1000)),
      },
    ]),
  ];
}

function percentiles(list) {
  return [
    { label: 'p50', color: '--ok', values: list.map((x) => x.p50) },
    { label: 'p95', color: '--warn', values: list.map((x) => x.p95) },
    { label: 'p99', color: '--bad', values: list.map((x) => x.p99) },
  ];
}

/**
 * The starts of the processes that answer now (the overview's snapshot), inside the range: marks on the
 * time axis.
 */
function processStarts(view) {
  const procs = snapshot ? snapshot.processes : [];
  return procs
    .map((p) => ({ at: Date.parse(p.startedAt) / 1000, kind: 'start', label: `${p.host}:${p.pid}` }))
    .filter((m) => m.at * 1000 >= view.fromMs && m.at * 1000 <= view.toMs);
}

/** The recorded marks (deploys; pauses and resumes of the queue shown, or of every queue for `*`). */
function recordedMarks(view, queue) {
  return (view.marks || [])
    .filter((m) => m.queue === undefined || queue === '*' || m.queue === queue)
    .map((m) => ({
      at: m.at / 1000,
      kind: m.kind,
      label:
        m.kind === 'deploy'
          ? ['deploy', m.release, m.note].filter((x) => x).join(' ')
          : `${m.kind} ${m.queue}`,
      host: m.host,
    }));
}

/** The marks as a table (time, kind, what, where), newest first; a count of skipped mark records. */
function marksTable(marks, view) {
  if (!marks.length && !view.marksSkipped) return null;
  const rows = marks
    .slice()
    .sort((a, b) => b.at - a.at)
    .map((m) =>
      h('tr', {}, [
        h('td', {}, new Date(m.at * 1000).toLocaleTimeString()),
        h('td', {}, m.kind === 'start' ? 'process start' : m.kind),
        h('td', {}, m.label),
      ]),
    );
  return h('details', { 'data-testid': 'graph-marks' }, [
    h(
      'summary',
      {},
      `Marks (${marks.length}): dashed lines are process starts, solid lines deploys, pauses and resumes` +
        `${view.marksSkipped ? `; ${view.marksSkipped} mark record(s) skipped (untrusted or malformed)` : ''}`,
    ),
    table(['time', 'kind', 'what'], rows, 'table-marks'),
  ]);
}

/**
 * One chart and its data table.
 * @param {string} id
 * @param {string} title
 * @param {number[]} xs
 * @param {{ at: number, label: string }[]} marks
 * @param {{ label: string, color: string, values: (number | null)[] }[]} lines
 */
function chart(id, title, xs, marks, lines) {
  const plot = h('div', { class: 'plot', 'data-testid': `chart-${id}`, role: 'img', 'aria-label': title });
  const rows = xs
    .map((x, i) =>
      h(
        'tr',
        {},
        [h('td', {}, new Date(x * 1000).toLocaleTimeString())].concat(lines.map((l) => num(l.values[i]))),
      ),
    )
    .reverse();
  const data = h('details', {}, [
    h('summary', {}, `Data table (${xs.length} rows, newest first)`),
    table(['time'].concat(lines.map((l) => l.label)), rows, `table-${id}`),
  ]);
  const figure = h('figure', { class: 'graph' }, [h('figcaption', {}, title), plot, data]);
  pendingDraws.push(() => draw(plot, xs, marks, lines));
  return figure;
}

function draw(plot, xs, marks, lines) {
  const UPlot = /** @type {any} */ (window).uPlot;
  if (!UPlot || !plot.isConnected) return;
  const fg = cssColor('--muted');
  const grid = cssColor('--line');
  const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const options = {
    width: Math.max(320, plot.clientWidth || 600),
    height: 200,
    scales: { x: { time: true, range: (_u, min, max) => xRange(xs, marks, min, max) } },
    axes: [{ ...axis, space: 64, values: timeLabels }, axis],
    legend: { show: true },
    hooks: { draw: [(u) => drawMarks(u, marks, fg)] },
    series: [{}].concat(
      lines.map((l) => ({
        label: l.label,
        stroke: cssColor(l.color),
        width: 2,
        spanGaps: false,
        points: { size: 4 },
      })),
    ),
  };
  plot.marks = marks;
  plot.chart = new UPlot(options, [xs].concat(lines.map((l) => l.values)), plot);
}

/**
 * The time axis's labels, one line each: seconds (`:40`) between the minutes (`6:49 PM`) in an hour's view,
 * hours between the days (`Dec 4`) in a day's or a week's. uPlot's own labels put the full date under the
 * first tick, two lines wide enough to run into the next minute's label when a minute begins near the axis's
 * start. With `space` (64 px between ticks) wider than any of these, no two overlap.
 * @param {unknown} _u
 * @param {number[]} splits seconds since the epoch
 * @param {number} _axis
 * @param {number} _space
 * @param {number} incr seconds between ticks
 */
function timeLabels(_u, splits, _axis, _space, incr) {
  return splits.map((s) => {
    const d = new Date(s * 1000);
    const clock = d.toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' });
    const day = d.toLocaleDateString([], { month: 'short', day: 'numeric' });
    if (incr < 60) return d.getSeconds() === 0 ? clock : `:${String(d.getSeconds()).padStart(2, '0')}`;
    if (incr < 86_400) return d.getHours() === 0 && d.getMinutes() === 0 ? day : clock;
    return day;
  });
}

/** The time axis: the points' span, widened to the marks (a deploy in the open bucket is after the last point). */
function xRange(xs, marks, min, max) {
  const ats = marks.map((m) => m.at);
  const lo = Math.min.apply(null, [min].concat(xs.length ? [xs[0]] : [], ats));
  const hi = Math.max.apply(null, [max].concat(ats));
  return [lo, hi > lo ? hi : lo + 1];
}

const MARK_COLORS = { deploy: '--accent', pause: '--warn', resume: '--ok' };

/** Vertical lines at the marks over the plot area: process starts dashed, the others solid and labelled. */
function drawMarks(u, marks, color) {
  const ctx = u.ctx;
  const ratio = window.devicePixelRatio || 1;
  ctx.save();
  ctx.lineWidth = 1;
  ctx.font = `${11 * ratio}px sans-serif`;
  marks.forEach((m, i) => {
    // On a pixel's middle: a 1 px line on a pixel's edge is drawn as two half-transparent ones.
    const x = Math.round(u.valToPos(m.at, 'x', true)) + 0.5;
    const started = m.kind === 'start';
    ctx.strokeStyle = started ? color : cssColor(MARK_COLORS[m.kind] || '--muted');
    ctx.setLineDash(started ? [4, 4] : []);
    ctx.beginPath();
    ctx.moveTo(x, u.bbox.top);
    ctx.lineTo(x, u.bbox.top + u.bbox.height);
    ctx.stroke();
    if (started) return;
    ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(m.label.slice(0, 40), x + 3 * ratio, u.bbox.top + (12 + (i % 3) * 12) * ratio);
  });
  ctx.restore();
}
