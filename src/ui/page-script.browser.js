/**
 * The dashboard's script: plain browser JavaScript, no framework, no build. The server sends this file as
 * it is at /app.js (page-script.ts reads it); Biome lints it and `npm run typecheck` checks it against the
 * DOM's types (tsconfig.browser.json). A classic script, not a module: it keeps its own 'use strict'.
 *
 * Hash routes (#/, #/graphs (graphs.browser.js), #/queue/k, #/dead?filters, #/dead/offset, #/job/id); the overview follows server-sent
 * events; every action posts JSON with the session's CSRF token. Text goes into the DOM as text (never as
 * HTML), with control characters (C0 but tab and newline, DEL, C1) and bidirectional overrides shown as \u
 * escapes: a job name or an error from anyone who can publish cannot reorder or hide what the operator
 * reads.
 */
// biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), where it is not redundant
'use strict';
let session = null;
let snapshot = null;
/**
 * An element page-html.ts always has.
 * @param {string} id
 * @returns {HTMLElement}
 */
function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}
const main = byId('main');
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function safe(text) {
  return String(text).replace(UNSAFE, (c) => `\\u${(`000${c.charCodeAt(0).toString(16)}`).slice(-4)}`);
}

function h(tag, attrs, children) {
  const el = document.createElement(tag);
  Object.keys(attrs || {}).forEach((k) => {
    if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), attrs[k]);
    else if (attrs[k] !== undefined && attrs[k] !== false)
      el.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
  });
  [].concat(children === undefined ? [] : children).forEach((c) => {
    if (c === null || c === undefined || c === false) return;
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(safe(c)));
  });
  return el;
}
function table(head, rows, testid) {
  return h('table', { 'data-testid': testid }, [
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((x) => h('th', {}, x)),
      ),
    ),
    h('tbody', {}, rows),
  ]);
}
function num(v) {
  return h('td', { class: 'num' }, v === undefined || v === null ? '–' : String(v));
}
function when(v) {
  return v ? new Date(v).toLocaleString() : '–';
}
function can(action) {
  const order = ['viewer', 'operator', 'admin'];
  return session && order.indexOf(session.role) >= order.indexOf(session.permissions[action]);
}
function flash(text, ok) {
  const el = byId('flash');
  el.hidden = false;
  el.textContent = safe(text);
  el.className = ok ? 'ok' : 'bad';
}
function api(path) {
  return fetch(path, { credentials: 'same-origin' }).then((r) =>
    r.json().then((body) => {
      if (!r.ok) throw new Error(body.error || r.statusText);
      return body;
    }),
  );
}
function act(action, body) {
  const headers = { 'content-type': 'application/json' };
  headers[session.csrfHeader] = session.csrf;
  return fetch(`api/actions/${action}`, {
    method: 'POST',
    headers: headers,
    credentials: 'same-origin',
    body: JSON.stringify(body),
  }).then((r) =>
    r.json().then((res) => {
      if (!r.ok) {
        flash(`${action} refused: ${res.error || r.statusText}`, false);
        throw new Error(res.error);
      }
      return res;
    }),
  );
}
function button(label, action, onclick, danger) {
  return h(
    'button',
    {
      class: danger ? 'danger' : undefined,
      disabled: !can(action),
      title: can(action) ? undefined : `${action} needs the ${session.permissions[action]} role`,
      'data-action': action,
      onclick: onclick,
    },
    label,
  );
}
function pauseButton(q) {
  const verb = q.paused ? 'resume' : 'pause';
  return button(verb === 'pause' ? 'Pause' : 'Resume', verb, () => {
    act(verb, { queue: q.key })
      .then((r) => {
        flash(
          `${(r.paused ? 'paused ' : 'resumed ') + r.queue}: confirmed by ${r.confirmed.length} process(es)`,
          true,
        );
      })
      .catch(() => {});
  });
}

function overview() {
  if (!snapshot) return [h('p', { class: 'muted' }, 'loading…')];
  const queues = snapshot.queues.map((q) =>
    h('tr', { 'data-queue': q.key, 'data-ready': q.ready, 'data-paused': String(q.paused) }, [
      h('td', {}, h('a', { href: `#/queue/${encodeURIComponent(q.key)}` }, q.key)),
      h('td', { class: 'muted' }, q.type),
      num(q.exists ? q.ready : 'missing'),
      num(q.unacked),
      num(q.consumers),
      num(q.dead),
      h('td', { class: 'num', 'data-testid': 'rate' }, q.rate === undefined ? '–' : q.rate.toFixed(1)),
      h('td', {}, q.paused ? h('span', { class: 'tag warn' }, 'paused') : ''),
      h('td', {}, pauseButton(q)),
    ]),
  );
  const procs = snapshot.processes.map((p) =>
    h('tr', {}, [
      h('td', {}, p.id.slice(0, 8)),
      h('td', {}, `${p.host}:${p.pid}`),
      h('td', {}, p.version),
      h('td', {}, p.isLeader ? h('span', { class: 'tag ok' }, 'cron leader') : ''),
      h(
        'td',
        {},
        p.queues.map((q) => (q.paused ? `${q.key} (paused: ${q.holders.join('+')})` : q.key)).join(', '),
      ),
      h(
        'td',
        {},
        p.breakers.map((b) =>
          h('span', { class: `tag ${b.state === 'closed' ? 'ok' : 'bad'}` }, `${b.name} ${b.state}`),
        ),
      ),
    ]),
  );
  const scheds = snapshot.schedules.map((s) =>
    h('tr', {}, [
      h('td', {}, s.id),
      h('td', {}, s.job),
      h('td', {}, s.pattern),
      h('td', {}, s.tz),
      h('td', {}, when(s.nextFireAt)),
      h('td', {}, s.firedBy ? s.firedBy.slice(0, 8) : '–'),
      h(
        'td',
        {},
        s.isFired
          ? h('span', { class: 'tag ok' }, 'yes')
          : h('span', { class: `tag ${s.notFired === 'paused' ? 'warn' : 'bad'}` }, `no: ${s.notFired}`),
      ),
    ]),
  );
  return [
    snapshot.errors.length ? h('p', { class: 'tag bad' }, snapshot.errors.join('; ')) : null,
    h('h2', {}, `Queues (${snapshot.queues.length})`),
    table(['Queue', 'Type', 'Ready', 'Unacked', 'Consumers', 'Parked', 'Jobs/s', '', ''], queues, 'queues'),
    h(
      'p',
      { class: 'muted', 'data-testid': 'queue-sources' },
      'Ready, Consumers and Parked come from the broker (a passive declare of the queue and of its parking ' +
        'queue: Parked counts the dead letters not yet moved to the dead-letter log). Unacked comes from ' +
        'the management API (– without it). Jobs/s: deliveries handled per second between two snapshots. ' +
        'The Dead letters page reads the dead-letter log, which keeps letters after they leave the parking ' +
        'queue; the Graphs page reads the aggregates streams.',
    ),
    h('h2', {}, `Processes (${snapshot.processes.length})`),
    procs.length
      ? table(['Id', 'Host', 'Version', 'Cron', 'Queues', 'Breakers'], procs, 'processes')
      : h('p', { class: 'muted' }, 'no warren process answered'),
    snapshot.silent
      ? h('p', { class: 'tag bad' }, `${snapshot.silent} listening process(es) did not answer`)
      : null,
    ...runningNow(),
    h('h2', {}, 'Schedules'),
    scheds.length
      ? table(['Id', 'Job', 'Pattern', 'Zone', 'Next fire', 'Fired by', 'Fires'], scheds, 'schedules')
      : h('p', { class: 'muted' }, 'no schedules'),
    h('p', { class: 'muted' }, `as of ${when(snapshot.at)}`),
  ];
}

/**
 * The process consuming an ordered partition, as the processes report it (`host:pid`, as `warren queues`
 * prints it), '-' when none says so. While the count changes, the processes consume the draining set.
 */
function partitionOwner(q, lane) {
  const drainingSet = q.lanes.some((l) => l.draining);
  if (lane.draining !== drainingSet) return '-';
  const owners = (snapshot?.processes || []).filter((p) =>
    (p.queues || []).some((s) => s.key === q.key && s.partitions && s.partitions.owned.includes(lane.index)),
  );
  return owners.length === 0 ? '-' : owners.map((p) => `${p.host}:${p.pid}`).join(', ');
}

/**
 * A queue with per-key limits (docs/guide/per-key-limits.md): the jobs waiting on a key's limit and those
 * re-delayed, summed over the processes that answered, and the keys with the most jobs running.
 */
function keyLimitLines(q) {
  const reports = [];
  for (const p of snapshot?.processes || [])
    for (const pq of p.queues || []) if (pq.key === q.key && pq.keyLimits) reports.push(pq.keyLimits);
  if (reports.length === 0) return [];
  const keys = new Map();
  for (const r of reports)
    for (const k of r.busiestKeys) {
      const seen = keys.get(k.key) || { running: 0, recentStarts: 0 };
      keys.set(k.key, {
        running: seen.running + k.running,
        recentStarts: seen.recentStarts + k.recentStarts,
      });
    }
  const busiest = [...keys]
    .sort((a, b) => b[1].running - a[1].running || b[1].recentStarts - a[1].recentStarts)
    .slice(0, 10);
  const held = reports.reduce((n, r) => n + r.held, 0);
  const deferred = reports.reduce((n, r) => n + r.deferred, 0);
  return [
    h('h3', {}, 'Per-key limits'),
    h(
      'p',
      { 'data-testid': 'key-limits-waiting' },
      `${held} job${held === 1 ? '' : 's'} waiting on a key's limit; ${deferred} re-delayed since the workers started.`,
    ),
    h(
      'p',
      { 'data-testid': 'key-limits-busiest' },
      busiest.length === 0
        ? 'No key is running.'
        : `Busiest keys: ${busiest
            .map(
              ([k, v]) =>
                `${k} (${v.running} running${v.recentStarts > 0 ? `, ${v.recentStarts} started in its rate window` : ''})`,
            )
            .join(', ')}`,
    ),
  ];
}

/**
 * A queue with fairness or ordered partitions: the depth of each lane (docs/guide/fair-share.md), and each
 * partition's owner (docs/guide/ordered-partitions.md).
 */
function laneTable(q) {
  if (!q.lanes || q.lanes.length === 0) return [];
  // ordered or not (`order: 'none'`, per-key limits), a partition has one owner
  const ordered = q.lanes.some((lane) => lane.ordered || lane.partition);
  const rows = q.lanes.map((lane) =>
    h('tr', { 'data-lane': String(lane.index), 'data-draining': String(lane.draining) }, [
      h('td', {}, lane.draining ? `${lane.index} (draining)` : String(lane.index)),
      num(lane.exists ? lane.ready : 'missing'),
      num(lane.unacked),
      num(lane.consumers),
      ordered ? h('td', { 'data-testid': 'owner' }, partitionOwner(q, lane)) : null,
    ]),
  );
  const head = ordered
    ? ['Partition', 'Ready', 'Unacked', 'Consumers', 'Owner']
    : ['Lane', 'Ready', 'Unacked', 'Consumers'];
  const table = h('table', { 'data-testid': 'lanes' }, [
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((t) => h('th', {}, t)),
      ),
    ),
    h('tbody', {}, rows),
  ]);
  if (ordered) return [h('h3', {}, 'Partitions'), table, ...keyLimitLines(q)];
  const waiting = new Map();
  for (const p of snapshot?.processes || [])
    for (const pq of p.queues || []) {
      if (pq.key !== q.key || !pq.fairness) continue;
      for (const k of pq.fairness.busiestKeys) waiting.set(k.key, (waiting.get(k.key) || 0) + k.waiting);
    }
  const busiest = [...waiting].sort((a, b) => b[1] - a[1]).slice(0, 5);
  return [
    h('h3', {}, 'Lanes'),
    h(
      'p',
      { 'data-testid': 'busiest-keys' },
      busiest.length === 0
        ? 'No key waits in any worker.'
        : `Busiest keys: ${busiest.map(([k, n]) => `${k === '' ? '(no key)' : k} (${n} waiting)`).join(', ')}`,
    ),
    table,
  ];
}

function queueFacts(key) {
  const q = snapshot?.queues.filter((x) => x.key === key)[0];
  if (!q) return [h('p', { class: 'muted' }, snapshot ? `no queue ${key}` : 'loading…')];
  return [
    h('h2', {}, `Queue ${key}${q.paused ? ' (paused)' : ''}`),
    h('dl', {}, [
      h('dt', {}, 'Broker name'),
      h('dd', {}, q.name),
      h('dt', {}, 'Ready'),
      h('dd', {}, q.ready),
      h('dt', {}, 'Unacked'),
      h('dd', {}, q.unacked === undefined ? '– (needs the management API)' : q.unacked),
      h('dt', {}, 'Consumers'),
      h('dd', {}, q.consumers),
      h('dt', {}, 'In parking queue'),
      h('dd', {}, q.dead),
    ]),
    ...laneTable(q),
    h('div', { class: 'bar' }, [
      pauseButton(q),
      h('a', { href: `#/dead?queue=${encodeURIComponent(key)}&state=dead` }, `Dead letters of ${key}`),
    ]),
    h('p', { class: 'muted', 'data-testid': 'as-of', 'data-at': snapshot.at }, `as of ${when(snapshot.at)}`),
  ];
}

/**
 * A payload or result the history kept (JSON text), as text; a cut one says how much of it is shown.
 * Undefined when the writer kept none.
 * @param {string | undefined} text
 * @param {number | undefined} bytes the full size, set when `text` is its first bytes alone
 */
function keptText(text, bytes) {
  if (text === undefined || text === null) return undefined;
  const shown = new TextEncoder().encode(text).length;
  return bytes === undefined || bytes === null ? text : `${text} … (its first ${shown} of ${bytes} bytes)`;
}
function keptCell(text, bytes, testid) {
  const value = keptText(text, bytes);
  return h('td', { class: 'kept', 'data-testid': testid }, value === undefined ? '–' : value);
}

/** The queue's newest completed and failed jobs, from the history; each links to its job page. */
function recentOf(key) {
  const out = h('div', { 'data-testid': 'recent' }, h('p', { class: 'muted' }, 'reading the history…'));
  const rows = (list, isCompleted) =>
    list.map((j) =>
      h('tr', { 'data-job': j.jobId }, [
        h('td', {}, h('a', { href: `#/job/${encodeURIComponent(j.jobId)}` }, j.jobId)),
        h('td', {}, j.name),
        h('td', {}, when(j.at)),
        num(j.attempt),
        num(j.durationMs),
        keptCell(j.payload, j.payloadBytes, 'recent-payload'),
        isCompleted
          ? keptCell(j.result, j.resultBytes, 'recent-result')
          : h('td', {}, `${j.kind}${j.reason ? ` (${j.reason})` : ''}: ${j.error || ''}`),
      ]),
    );
  const head = (last) => ['Job', 'Name', 'At', 'Attempt', 'Run ms', 'Payload', last];
  api(`api/queues/${encodeURIComponent(key)}/recent`).then(
    (r) => {
      if (r.isWritten === false)
        return out.replaceChildren(
          h('p', { class: 'muted' }, 'No history: the workers run without `history`.'),
        );
      out.replaceChildren(
        h('h2', {}, `Recently completed (${r.completed.length})`),
        table(head('Result'), rows(r.completed, true), 'recent-completed'),
        h('h2', {}, `Recently failed (${r.failed.length})`),
        table(head('Error'), rows(r.failed, false), 'recent-failed'),
        h(
          'p',
          { class: 'muted', 'data-testid': 'recent-source' },
          `From the job history since ${when(r.sinceMs)} (${r.batches} batches read), newest first, 20 at most. ` +
            'Payload and result as the workers kept them (history.payloads, history.results: their first ' +
            'bytes, `–` when a worker keeps none); a dead job’s whole payload is on its dead letter.',
        ),
      );
    },
    (e) => out.replaceChildren(h('p', { class: 'tag bad' }, e.message)),
  );
  return out;
}

/** The queue's `controllable` delayed jobs due next, from the job-control stream. */
function delayedOf(key) {
  const out = h('div', { 'data-testid': 'delayed' }, h('p', { class: 'muted' }, 'reading job control…'));
  api(`api/queues/${encodeURIComponent(key)}/delayed`).then(
    (list) =>
      out.replaceChildren(
        h('h2', {}, `Delayed, due next (${list.length})`),
        table(
          ['Job', 'Name', 'Due'],
          list.map((j) =>
            h('tr', { 'data-job': j.jobId }, [
              h('td', {}, h('a', { href: `#/job/${encodeURIComponent(j.jobId)}` }, j.jobId)),
              h('td', {}, j.name),
              h('td', {}, when(j.dueAt)),
            ]),
          ),
          'delayed-due',
        ),
        h(
          'p',
          { class: 'muted', 'data-testid': 'delayed-source' },
          'From the job-control stream: jobs published with `controllable: true`, soonest first, 20 at most. ' +
            'Other delayed jobs wait in the delay queues, which cannot be listed without consuming them.',
        ),
      ),
    (e) => out.replaceChildren(h('p', { class: 'tag bad' }, e.message)),
  );
  return out;
}

// Only the facts follow the snapshots: what the user types in the forms below stays.
function queuePage(key) {
  const facts = h('div', { id: 'queue-facts', 'data-key': key }, queueFacts(key));
  const confirm = h('input', { placeholder: `type ${key} to confirm`, 'data-testid': 'purge-confirm' });
  const job = h('input', { placeholder: 'job name', 'data-testid': 'publish-job' });
  const data = h('textarea', { rows: 3, cols: 50, 'data-testid': 'publish-data' }, '{}');
  return [
    facts,
    delayedOf(key),
    recentOf(key),
    h('h2', {}, 'Purge its dead letters'),
    h('div', { class: 'bar' }, [
      confirm,
      button(
        'Purge',
        'purge',
        () => {
          act('purge', { filter: { queue: key, state: 'dead' }, confirm: confirm.value })
            .then((r) => {
              flash(`purged ${r.purged} dead letter(s) of ${key}`, true);
            })
            .catch(() => {});
        },
        true,
      ),
    ]),
    h('h2', {}, 'Publish a job'),
    h('div', { class: 'bar' }, [
      job,
      data,
      button('Publish', 'publish', () => {
        let parsed;
        try {
          parsed = JSON.parse(data.value || '{}');
        } catch (_e) {
          return flash('data is not JSON', false);
        }
        act('publish', { job: job.value, data: parsed })
          .then((r) => {
            flash(`published ${r.jobId}`, true);
          })
          .catch(() => {});
      }),
    ]),
  ];
}

const FIELDS = [
  'jobId',
  'name',
  'queue',
  'reason',
  'errorClass',
  'error',
  'state',
  'since',
  'until',
  'field',
];
function deadPage(params) {
  const inputs = {};
  const form = h(
    'form',
    {
      class: 'filters',
      'data-testid': 'dead-filters',
      onsubmit: (e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        FIELDS.forEach((f) => {
          if (inputs[f].value) q.set(f, inputs[f].value);
        });
        location.hash = `#/dead?${q.toString()}`;
      },
    },
    FIELDS.map((f) => {
      inputs[f] = h('input', { name: f, value: params.get(f) || '', size: f === 'jobId' ? 24 : 12 });
      return h('label', {}, [f, inputs[f]]);
    }).concat([h('button', { type: 'submit' }, 'Search')]),
  );
  const list = h('div', {}, h('p', { class: 'muted' }, 'loading…'));
  const filter = {};
  FIELDS.forEach((f) => {
    if (params.get(f)) filter[f] = params.get(f);
  });
  api(`api/dead?${params.toString()}`)
    .then((res) => {
      const boxes = [];
      const rows = res.letters.map((l) => {
        const box = h('input', { type: 'checkbox', value: l.offset });
        boxes.push(box);
        return h('tr', { 'data-offset': l.offset, 'data-job-id': l.jobId }, [
          h('td', {}, box),
          h('td', {}, h('a', { href: `#/dead/${l.offset}` }, String(l.offset))),
          h('td', {}, l.jobId || '–'),
          h('td', {}, l.name),
          h('td', {}, l.queue),
          h('td', {}, l.reason),
          h('td', {}, l.error || ''),
          h('td', {}, when(l.deadAt)),
          h('td', {}, h('span', { class: `tag ${l.state === 'dead' ? 'bad' : 'ok'}` }, l.state)),
        ]);
      });
      const selected = () => boxes.filter((b) => b.checked).map((b) => Number(b.value));
      list.replaceChildren(
        h('div', { class: 'bar' }, [
          h('span', { 'data-testid': 'dead-total' }, `${res.total} matching`),
          button('Replay selected', 'replay', () => {
            act('replay', { filter: { offsets: selected() } })
              .then((r) => {
                flash(`replayed ${r.replayed} letter(s)`, true);
                route();
              })
              .catch(() => {});
          }),
          button('Dry run: count replayable', 'replay', () => {
            act('replay', { filter: filter, dryRun: true })
              .then((r) => {
                flash(`dry run: ${r.selected} letter(s) would be replayed`, true);
              })
              .catch(() => {});
          }),
          button('Replay all matching', 'replay', () => {
            act('replay', { filter: filter })
              .then((r) => {
                flash(`replayed ${r.replayed} letter(s)`, true);
                route();
              })
              .catch(() => {});
          }),
        ]),
        table(
          ['', 'Offset', 'Job id', 'Job', 'Queue', 'Reason', 'Error', 'Died', 'State'],
          rows,
          'dead-letters',
        ),
      );
    })
    .catch((e) => {
      list.replaceChildren(h('p', { class: 'tag bad' }, e.message));
    });
  return [h('h2', {}, 'Dead letters'), form, list];
}

function letterPage(offset) {
  const box = h('div', {}, h('p', { class: 'muted' }, 'loading…'));
  api(`api/dead/${offset}`)
    .then((l) => {
      const facts = [
        'offset',
        'state',
        'jobId',
        'name',
        'queue',
        'reason',
        'errorClass',
        'error',
        'attempt',
        'replayOf',
      ];
      box.replaceChildren(
        h(
          'dl',
          { 'data-testid': 'letter' },
          facts.reduce(
            (acc, f) => acc.concat([h('dt', {}, f), h('dd', {}, l[f] === undefined ? '–' : String(l[f]))]),
            [h('dt', {}, 'died'), h('dd', {}, when(l.deadAt))],
          ),
        ),
        h('h2', {}, 'Payload'),
        h('pre', { 'data-testid': 'payload' }, JSON.stringify(l.data, null, 2)),
        h('h2', {}, 'Error'),
        h('pre', { 'data-testid': 'error-stack' }, l.lastError || l.error || '–'),
        h('h2', {}, 'Headers'),
        table(
          ['Header', 'Value'],
          Object.keys(l.headers || {})
            .sort()
            .map((k) => h('tr', {}, [h('td', {}, k), h('td', {}, String(l.headers[k]))])),
          'headers',
        ),
        h('div', { class: 'bar' }, [
          button('Replay', 'replay', () => {
            act('replay', { filter: { offsets: [l.offset] } })
              .then((r) => {
                flash(`replayed ${r.replayed} letter(s)`, true);
                route();
              })
              .catch(() => {});
          }),
        ]),
      );
    })
    .catch((e) => {
      box.replaceChildren(h('p', { class: 'tag bad' }, e.message));
    });
  return [h('h2', {}, `Dead letter ${offset}`), box];
}

/** The job page's live stream (ops.events through api/jobs/<id>/events); closed when the page changes. */
let jobStream;

/** What one live event or notice says beyond its kind. */
function liveDetail(e) {
  if (e.kind === 'progress') return e.isTruncated ? '(too large)' : JSON.stringify(e.progress);
  if (e.kind === 'completed') return e.isTruncated ? '(result too large)' : JSON.stringify(e.result);
  if (e.kind === 'gap') return `missed ${e.missed} event(s) of ${e.process}`;
  if (e.kind === 'reconnected') return `away ${e.downMs} ms: events meanwhile were missed`;
  return [e.reason, e.error].filter(Boolean).join(': ');
}

/** Follows one job live: every event any process sends for it from now on, newest last. */
function liveJob(id) {
  const rows = h('tbody', { 'data-testid': 'job-live' });
  const state = h('span', { class: 'tag', 'data-testid': 'job-live-state' }, 'waiting for events');
  jobStream = new EventSource(`api/jobs/${encodeURIComponent(id)}/events`);
  jobStream.addEventListener('job', (m) => {
    const e = JSON.parse(m.data);
    if (e.kind !== 'gap' && e.kind !== 'reconnected') {
      state.textContent = safe(e.kind);
      state.className = e.kind === 'dead' || e.kind === 'failed' ? 'tag bad' : 'tag ok';
    }
    rows.append(
      h('tr', {}, [
        h('td', {}, e.kind),
        h('td', {}, e.at ? when(e.at) : '–'),
        num(e.attempt),
        h('td', {}, e.process || '–'),
        h('td', {}, liveDetail(e)),
      ]),
    );
  });
  return h('div', {}, [
    h('h3', {}, ['Live ', state]),
    h('table', {}, [
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Event', 'At', 'Attempt', 'Process', 'Detail'].map((c) => h('th', {}, c)),
        ),
      ),
      rows,
    ]),
  ]);
}

function jobPage(id) {
  const input = h('input', { name: 'jobId', value: id || '', size: 40, 'data-testid': 'job-id' });
  const out = h('div', {});
  if (id)
    api(`api/jobs/${encodeURIComponent(id)}`)
      .then((s) => {
        const rows = s.events.map((e) =>
          h('tr', {}, [
            h('td', {}, e.kind),
            h('td', {}, when(e.at)),
            num(e.attempt),
            h('td', {}, e.process || '–'),
            num(e.durationMs),
            h('td', {}, e.runAt ? when(e.runAt) : '–'),
            h('td', {}, [e.reason, e.error].filter(Boolean).join(': ')),
          ]),
        );
        // the newest events that kept a payload and a result
        const kept = s.events.filter((e) => e.payload !== undefined).pop();
        const result = s.events.filter((e) => e.result !== undefined).pop();
        out.replaceChildren(
          h('p', {}, ['state ', h('span', { class: 'tag ok', 'data-testid': 'job-state' }, s.state)]),
          kept
            ? h('div', {}, [
                h('h3', {}, `Payload (${kept.kind}, attempt ${kept.attempt})`),
                h('pre', { 'data-testid': 'job-payload' }, keptText(kept.payload, kept.payloadBytes)),
              ])
            : undefined,
          result
            ? h('div', {}, [
                h('h3', {}, 'Result'),
                h('pre', { 'data-testid': 'job-result' }, keptText(result.result, result.resultBytes)),
              ])
            : undefined,
          rows.length
            ? table(['Event', 'At', 'Attempt', 'Process', 'Took ms', 'Runs at', 'Why'], rows, 'job-events')
            : h(
                'p',
                { class: 'muted' },
                'no history of this job (history off on the workers, expired, or never published)',
              ),
        );
      })
      .catch((e) => {
        out.replaceChildren(h('p', { class: 'tag bad' }, e.message));
      });
  return [
    h('h2', {}, 'Find a job by id'),
    h(
      'form',
      {
        class: 'bar',
        onsubmit: (e) => {
          e.preventDefault();
          location.hash = `#/job/${encodeURIComponent(input.value)}`;
        },
      },
      [input, h('button', { type: 'submit' }, 'Find')],
    ),
    id ? liveJob(id) : undefined,
    out,
  ];
}

/** The jobs each process runs now (listed by processes with `aggregates` on), each linking to its live page. */
function runningNow() {
  const rows = [];
  let listing = 0;
  snapshot.processes.forEach((p) => {
    if (p.running) listing += 1;
    (p.running || []).forEach((r) => {
      // snapshot.at is an ISO string, startedAt ms since the epoch
      const age = Math.max(0, Math.round((Date.parse(snapshot.at) - r.startedAt) / 1000));
      rows.push(
        h('tr', { 'data-job': r.jobId }, [
          h('td', {}, h('a', { href: `#/job/${encodeURIComponent(r.jobId)}` }, r.jobId)),
          h('td', {}, r.name),
          h('td', {}, r.queue),
          h('td', {}, `${p.host}:${p.pid}`),
          num(r.attempt),
          h('td', { class: 'num', 'data-testid': 'running-age' }, `${age} s`),
          h('td', { 'data-testid': 'running-progress' }, r.progress === undefined ? '–' : String(r.progress)),
        ]),
      );
    });
  });
  return [
    h('h2', {}, `Running now (${rows.length})`),
    rows.length
      ? table(['Job', 'Name', 'Queue', 'Process', 'Attempt', 'Age', 'Progress'], rows, 'running')
      : h('p', { class: 'muted' }, 'no job running'),
    h(
      'p',
      { class: 'muted', 'data-testid': 'running-source' },
      `From the processes' status replies: ${listing} of ${snapshot.processes.length} list their running jobs ` +
        '(those with the aggregates option on), at most 50 each.',
    ),
  ];
}

let current = '';
function route() {
  const hash = location.hash.slice(1) || '/';
  const q = hash.indexOf('?');
  const path = q < 0 ? hash : hash.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  current = parts[0] || '';
  jobStream?.close();
  jobStream = undefined;
  stopGraphs();
  const view = !parts[0]
    ? overview()
    : parts[0] === 'graphs'
      ? graphsPage(params)
      : parts[0] === 'queue'
        ? queuePage(parts[1])
        : parts[0] === 'dead'
          ? parts[1]
            ? letterPage(parts[1])
            : deadPage(params)
          : parts[0] === 'job'
            ? jobPage(parts[1])
            : [h('p', {}, 'no such page')];
  main.replaceChildren.apply(main, view.filter(Boolean));
}
window.addEventListener('hashchange', () => {
  byId('flash').hidden = true;
  route();
});

api('api/session')
  .then((s) => {
    session = s;
    byId('who').textContent = safe(`${s.role} · ${s.who}`);
    if (s.notice) {
      const notice = byId('notice');
      notice.textContent = safe(s.notice);
      notice.hidden = false;
    }
    route();
    const events = new EventSource('api/events');
    const live = byId('live');
    events.addEventListener('snapshot', (e) => {
      snapshot = JSON.parse(e.data);
      live.textContent = 'live';
      live.className = 'live on';
      const facts = document.getElementById('queue-facts');
      if (current === '') route();
      else if (current === 'queue' && facts)
        facts.replaceChildren.apply(facts, queueFacts(facts.dataset.key).filter(Boolean));
    });
    events.onerror = () => {
      // A refused stream (too many open, 429/503) is not retried by the browser: say so.
      const closed = events.readyState === EventSource.CLOSED;
      live.textContent = closed ? 'not live (too many views open? reload)' : 'reconnecting…';
      live.className = 'live';
    };
  })
  .catch((e) => {
    main.replaceChildren(h('p', { class: 'tag bad' }, e.message));
  });
