/**
 * The dashboard's script: plain browser JavaScript, no framework, no build. Hash routes (#/, #/queue/k,
 * #/dead?filters, #/dead/offset, #/job/id); the overview follows server-sent events; every action posts
 * JSON with the session's CSRF token. Text goes into the DOM as text (never as HTML), with control
 * characters (C0 but tab and newline, DEL, C1) and bidirectional overrides shown as \u escapes: a job name
 * or an error from anyone who can publish cannot reorder or hide what the operator reads.
 */
export const PAGE_SCRIPT = `'use strict';
var session = null;
var snapshot = null;
var main = document.getElementById('main');
var UNSAFE = /[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]/g;

function safe(text) {
  return String(text).replace(UNSAFE, function (c) {
    return '\\\\u' + ('000' + c.charCodeAt(0).toString(16)).slice(-4);
  });
}

function h(tag, attrs, children) {
  var el = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) {
    if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), attrs[k]);
    else if (attrs[k] !== undefined && attrs[k] !== false) el.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
  });
  [].concat(children === undefined ? [] : children).forEach(function (c) {
    if (c === null || c === undefined || c === false) return;
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(safe(c)));
  });
  return el;
}
function table(head, rows, testid) {
  return h('table', { 'data-testid': testid }, [
    h('thead', {}, h('tr', {}, head.map(function (x) { return h('th', {}, x); }))),
    h('tbody', {}, rows),
  ]);
}
function num(v) { return h('td', { class: 'num' }, v === undefined || v === null ? '–' : String(v)); }
function when(v) { return v ? new Date(v).toLocaleString() : '–'; }
function can(action) {
  var order = ['viewer', 'operator', 'admin'];
  return session && order.indexOf(session.role) >= order.indexOf(session.permissions[action]);
}
function flash(text, ok) {
  var el = document.getElementById('flash');
  el.hidden = false; el.textContent = safe(text); el.className = ok ? 'ok' : 'bad';
}
function api(path) {
  return fetch(path, { credentials: 'same-origin' }).then(function (r) {
    return r.json().then(function (body) { if (!r.ok) throw new Error(body.error || r.statusText); return body; });
  });
}
function act(action, body) {
  var headers = { 'content-type': 'application/json' };
  headers[session.csrfHeader] = session.csrf;
  return fetch('api/actions/' + action, { method: 'POST', headers: headers, credentials: 'same-origin',
    body: JSON.stringify(body) }).then(function (r) {
    return r.json().then(function (res) {
      if (!r.ok) { flash(action + ' refused: ' + (res.error || r.statusText), false); throw new Error(res.error); }
      return res;
    });
  });
}
function button(label, action, onclick, danger) {
  return h('button', { class: danger ? 'danger' : undefined, disabled: !can(action),
    title: can(action) ? undefined : action + ' needs the ' + session.permissions[action] + ' role',
    'data-action': action, onclick: onclick }, label);
}
function pauseButton(q) {
  var verb = q.paused ? 'resume' : 'pause';
  return button(verb === 'pause' ? 'Pause' : 'Resume', verb, function () {
    act(verb, { queue: q.key }).then(function (r) {
      flash((r.paused ? 'paused ' : 'resumed ') + r.queue + ': confirmed by ' + r.confirmed.length + ' process(es)', true);
    }).catch(function () {});
  });
}

function overview() {
  if (!snapshot) return [h('p', { class: 'muted' }, 'loading…')];
  var queues = snapshot.queues.map(function (q) {
    return h('tr', { 'data-queue': q.key, 'data-ready': q.ready, 'data-paused': String(q.paused) }, [
      h('td', {}, h('a', { href: '#/queue/' + encodeURIComponent(q.key) }, q.key)),
      h('td', { class: 'muted' }, q.type), num(q.exists ? q.ready : 'missing'), num(q.unacked), num(q.consumers),
      num(q.dead),
      h('td', { class: 'num', 'data-testid': 'rate' }, q.rate === undefined ? '–' : q.rate.toFixed(1)),
      h('td', {}, q.paused ? h('span', { class: 'tag warn' }, 'paused') : ''),
      h('td', {}, pauseButton(q)),
    ]);
  });
  var procs = snapshot.processes.map(function (p) {
    return h('tr', {}, [
      h('td', {}, p.id.slice(0, 8)), h('td', {}, p.host + ':' + p.pid), h('td', {}, p.version),
      h('td', {}, p.isLeader ? h('span', { class: 'tag ok' }, 'cron leader') : ''),
      h('td', {}, p.queues.map(function (q) { return q.paused ? q.key + ' (paused: ' + q.holders.join('+') + ')' : q.key; }).join(', ')),
      h('td', {}, p.breakers.map(function (b) {
        return h('span', { class: 'tag ' + (b.state === 'closed' ? 'ok' : 'bad') }, b.name + ' ' + b.state);
      })),
    ]);
  });
  var scheds = snapshot.schedules.map(function (s) {
    return h('tr', {}, [h('td', {}, s.id), h('td', {}, s.job), h('td', {}, s.pattern), h('td', {}, s.tz),
      h('td', {}, when(s.nextFireAt)), h('td', {}, s.firedBy ? s.firedBy.slice(0, 8) : '–')]);
  });
  return [
    snapshot.errors.length ? h('p', { class: 'tag bad' }, snapshot.errors.join('; ')) : null,
    h('h2', {}, 'Queues (' + snapshot.queues.length + ')'),
    table(['Queue', 'Type', 'Ready', 'Unacked', 'Consumers', 'Dead', 'Jobs/s', '', ''], queues, 'queues'),
    h('h2', {}, 'Processes (' + snapshot.processes.length + ')'),
    procs.length ? table(['Id', 'Host', 'Version', 'Cron', 'Queues', 'Breakers'], procs, 'processes')
      : h('p', { class: 'muted' }, 'no warren process answered'),
    snapshot.silent ? h('p', { class: 'tag bad' }, snapshot.silent + ' listening process(es) did not answer') : null,
    h('h2', {}, 'Schedules'),
    scheds.length ? table(['Id', 'Job', 'Pattern', 'Zone', 'Next fire', 'Fired by'], scheds, 'schedules')
      : h('p', { class: 'muted' }, 'no schedules'),
    h('p', { class: 'muted' }, 'as of ' + when(snapshot.at)),
  ];
}

function queueFacts(key) {
  var q = snapshot && snapshot.queues.filter(function (x) { return x.key === key; })[0];
  if (!q) return [h('p', { class: 'muted' }, snapshot ? 'no queue ' + key : 'loading…')];
  return [
    h('h2', {}, 'Queue ' + key + (q.paused ? ' (paused)' : '')),
    h('dl', {}, [h('dt', {}, 'Broker name'), h('dd', {}, q.name), h('dt', {}, 'Ready'), h('dd', {}, q.ready),
      h('dt', {}, 'Unacked'), h('dd', {}, q.unacked === undefined ? '– (needs the management API)' : q.unacked),
      h('dt', {}, 'Consumers'), h('dd', {}, q.consumers), h('dt', {}, 'In parking queue'), h('dd', {}, q.dead)]),
    h('div', { class: 'bar' }, [pauseButton(q),
      h('a', { href: '#/dead?queue=' + encodeURIComponent(key) + '&state=dead' }, 'Dead letters of ' + key)]),
    h('p', { class: 'muted', 'data-testid': 'as-of', 'data-at': snapshot.at }, 'as of ' + when(snapshot.at)),
  ];
}

// Only the facts follow the snapshots: what the user types in the forms below stays.
function queuePage(key) {
  var facts = h('div', { id: 'queue-facts', 'data-key': key }, queueFacts(key));
  var confirm = h('input', { placeholder: 'type ' + key + ' to confirm', 'data-testid': 'purge-confirm' });
  var job = h('input', { placeholder: 'job name', 'data-testid': 'publish-job' });
  var data = h('textarea', { rows: 3, cols: 50, 'data-testid': 'publish-data' }, '{}');
  return [
    facts,
    h('h2', {}, 'Purge its dead letters'),
    h('div', { class: 'bar' }, [confirm, button('Purge', 'purge', function () {
      act('purge', { filter: { queue: key, state: 'dead' }, confirm: confirm.value }).then(function (r) {
        flash('purged ' + r.purged + ' dead letter(s) of ' + key, true);
      }).catch(function () {});
    }, true)]),
    h('h2', {}, 'Publish a job'),
    h('div', { class: 'bar' }, [job, data, button('Publish', 'publish', function () {
      var parsed;
      try { parsed = JSON.parse(data.value || '{}'); } catch (e) { return flash('data is not JSON', false); }
      act('publish', { job: job.value, data: parsed }).then(function (r) {
        flash('published ' + r.jobId, true);
      }).catch(function () {});
    })]),
  ];
}

var FIELDS = ['jobId', 'name', 'queue', 'reason', 'errorClass', 'error', 'state', 'since', 'until', 'field'];
function deadPage(params) {
  var inputs = {};
  var form = h('form', { class: 'filters', 'data-testid': 'dead-filters', onsubmit: function (e) {
    e.preventDefault();
    var q = new URLSearchParams();
    FIELDS.forEach(function (f) { if (inputs[f].value) q.set(f, inputs[f].value); });
    location.hash = '#/dead?' + q.toString();
  } }, FIELDS.map(function (f) {
    inputs[f] = h('input', { name: f, value: params.get(f) || '', size: f === 'jobId' ? 24 : 12 });
    return h('label', {}, [f, inputs[f]]);
  }).concat([h('button', { type: 'submit' }, 'Search')]));
  var list = h('div', {}, h('p', { class: 'muted' }, 'loading…'));
  var filter = {};
  FIELDS.forEach(function (f) { if (params.get(f)) filter[f] = params.get(f); });
  api('api/dead?' + params.toString()).then(function (res) {
    var boxes = [];
    var rows = res.letters.map(function (l) {
      var box = h('input', { type: 'checkbox', value: l.offset });
      boxes.push(box);
      return h('tr', { 'data-offset': l.offset, 'data-job-id': l.jobId }, [h('td', {}, box),
        h('td', {}, h('a', { href: '#/dead/' + l.offset }, String(l.offset))), h('td', {}, l.jobId || '–'),
        h('td', {}, l.name), h('td', {}, l.queue), h('td', {}, l.reason), h('td', {}, l.error || ''),
        h('td', {}, when(l.deadAt)), h('td', {}, h('span', { class: 'tag ' + (l.state === 'dead' ? 'bad' : 'ok') }, l.state))]);
    });
    var selected = function () { return boxes.filter(function (b) { return b.checked; }).map(function (b) { return Number(b.value); }); };
    list.replaceChildren(
      h('div', { class: 'bar' }, [h('span', { 'data-testid': 'dead-total' }, res.total + ' matching'),
        button('Replay selected', 'replay', function () {
          act('replay', { filter: { offsets: selected() } }).then(function (r) {
            flash('replayed ' + r.replayed + ' letter(s)', true); route();
          }).catch(function () {});
        }),
        button('Dry run: count replayable', 'replay', function () {
          act('replay', { filter: filter, dryRun: true }).then(function (r) {
            flash('dry run: ' + r.selected + ' letter(s) would be replayed', true);
          }).catch(function () {});
        }),
        button('Replay all matching', 'replay', function () {
          act('replay', { filter: filter }).then(function (r) {
            flash('replayed ' + r.replayed + ' letter(s)', true); route();
          }).catch(function () {});
        })]),
      table(['', 'Offset', 'Job id', 'Job', 'Queue', 'Reason', 'Error', 'Died', 'State'], rows, 'dead-letters'));
  }).catch(function (e) { list.replaceChildren(h('p', { class: 'tag bad' }, e.message)); });
  return [h('h2', {}, 'Dead letters'), form, list];
}

function letterPage(offset) {
  var box = h('div', {}, h('p', { class: 'muted' }, 'loading…'));
  api('api/dead/' + offset).then(function (l) {
    var facts = ['offset', 'state', 'jobId', 'name', 'queue', 'reason', 'errorClass', 'error', 'attempt', 'replayOf'];
    box.replaceChildren(
      h('dl', { 'data-testid': 'letter' }, facts.reduce(function (acc, f) {
        return acc.concat([h('dt', {}, f), h('dd', {}, l[f] === undefined ? '–' : String(l[f]))]);
      }, [h('dt', {}, 'died'), h('dd', {}, when(l.deadAt))])),
      h('h2', {}, 'Payload'), h('pre', { 'data-testid': 'payload' }, JSON.stringify(l.data, null, 2)),
      h('h2', {}, 'Error'), h('pre', { 'data-testid': 'error-stack' }, l.lastError || l.error || '–'),
      h('h2', {}, 'Headers'),
      table(['Header', 'Value'], Object.keys(l.headers || {}).sort().map(function (k) {
        return h('tr', {}, [h('td', {}, k), h('td', {}, String(l.headers[k]))]);
      }), 'headers'),
      h('div', { class: 'bar' }, [button('Replay', 'replay', function () {
        act('replay', { filter: { offsets: [l.offset] } }).then(function (r) {
          flash('replayed ' + r.replayed + ' letter(s)', true); route();
        }).catch(function () {});
      })]));
  }).catch(function (e) { box.replaceChildren(h('p', { class: 'tag bad' }, e.message)); });
  return [h('h2', {}, 'Dead letter ' + offset), box];
}

function jobPage(id) {
  var input = h('input', { name: 'jobId', value: id || '', size: 40, 'data-testid': 'job-id' });
  var out = h('div', {});
  if (id) api('api/jobs/' + encodeURIComponent(id)).then(function (s) {
    var rows = s.events.map(function (e) {
      return h('tr', {}, [h('td', {}, e.kind), h('td', {}, when(e.at)), num(e.attempt),
        h('td', {}, e.process || '–'), num(e.durationMs), h('td', {}, e.runAt ? when(e.runAt) : '–'),
        h('td', {}, [e.reason, e.error].filter(Boolean).join(': '))]);
    });
    out.replaceChildren(h('p', {}, ['state ', h('span', { class: 'tag ok', 'data-testid': 'job-state' }, s.state)]),
      rows.length ? table(['Event', 'At', 'Attempt', 'Process', 'Took ms', 'Runs at', 'Why'], rows, 'job-events')
        : h('p', { class: 'muted' }, 'no history of this job (history off on the workers, expired, or never published)'));
  }).catch(function (e) { out.replaceChildren(h('p', { class: 'tag bad' }, e.message)); });
  return [h('h2', {}, 'Find a job by id'), h('form', { class: 'bar', onsubmit: function (e) {
    e.preventDefault(); location.hash = '#/job/' + encodeURIComponent(input.value);
  } }, [input, h('button', { type: 'submit' }, 'Find')]), out];
}

var current = '';
function route() {
  var hash = location.hash.slice(1) || '/';
  var q = hash.indexOf('?');
  var path = q < 0 ? hash : hash.slice(0, q);
  var params = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
  var parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  current = parts[0] || '';
  var view = !parts[0] ? overview() : parts[0] === 'queue' ? queuePage(parts[1])
    : parts[0] === 'dead' ? (parts[1] ? letterPage(parts[1]) : deadPage(params))
    : parts[0] === 'job' ? jobPage(parts[1]) : [h('p', {}, 'no such page')];
  main.replaceChildren.apply(main, view.filter(Boolean));
}
window.addEventListener('hashchange', function () { document.getElementById('flash').hidden = true; route(); });

api('api/session').then(function (s) {
  session = s;
  document.getElementById('who').textContent = safe(s.role + ' · ' + s.who);
  if (s.notice) {
    var notice = document.getElementById('notice');
    notice.textContent = safe(s.notice); notice.hidden = false;
  }
  route();
  var events = new EventSource('api/events');
  var live = document.getElementById('live');
  events.addEventListener('snapshot', function (e) {
    snapshot = JSON.parse(e.data);
    live.textContent = 'live'; live.className = 'live on';
    var facts = document.getElementById('queue-facts');
    if (current === '') route();
    else if (current === 'queue' && facts) facts.replaceChildren.apply(facts, queueFacts(facts.dataset.key).filter(Boolean));
  });
  events.onerror = function () {
    // A refused stream (too many open, 429/503) is not retried by the browser: say so.
    var closed = events.readyState === EventSource.CLOSED;
    live.textContent = closed ? 'not live (too many views open? reload)' : 'reconnecting…'; live.className = 'live';
  };
}).catch(function (e) { main.replaceChildren(h('p', { class: 'tag bad' }, e.message)); });
`;
