// The cluster page: the members from /status (with their progress as the
// leader sees it), this node's Raft state, and live charts from its own
// /metrics (the node's Prometheus text).
import {request, el} from './api.js';
import {chart} from './chart.js';

const EVERY = 2000;
const KEEP = 5 * 60 * 1000;
let ui = null;
let timer = null;

export function hide() {
  clearInterval(timer);
  timer = null;
}

export function show(section) {
  if (!ui) build(section);
  hide();
  tick();
  timer = setInterval(tick, EVERY);
}

function build(section) {
  const charts = {
    writes: chart('chart-writes', 'Writes/s', '/s'),
    reads: chart('chart-reads', 'Reads/s', '/s'),
    streams: chart('chart-streams', 'Open streams', ''),
    p99: chart('chart-p99', 'p99 latency', 'ms'),
  };
  ui = {
    members: el('tbody', {id: 'members'}),
    node: el('dl', {class: 'facts', id: 'node-facts'}),
    elections: el('ul', {id: 'elections'}),
    certs: el('ul', {id: 'certs'}),
    status: el('p', {class: 'status', role: 'status', id: 'cluster-status'}),
    charts, series: {writes: [], reads: [], streams: [], p99: []}, prev: null, term: 0, leader: '',
  };
  section.append(el('h1', {}, 'Cluster'), ui.status,
    el('div', {class: 'card'}, el('h2', {}, 'Members'),
      el('table', {class: 'members'},
        el('thead', {}, el('tr', {}, ['Member', 'Role', 'Suffrage', 'Health', 'Applied', 'Lag', 'Last contact', 'Version', 'Formats']
          .map((h) => el('th', {scope: 'col'}, h)))), ui.members)),
    el('div', {class: 'charts'}, Object.values(charts).map((c) => c.node)),
    el('div', {class: 'split'},
      el('div', {class: 'card'}, el('h2', {}, 'This node'), ui.node),
      el('div', {class: 'card'}, el('h2', {}, 'Elections'), ui.elections, el('h2', {}, 'Certificates'), ui.certs)));
}

async function tick() {
  try {
    const [st, text] = await Promise.all([request('GET', '/status'), request('GET', '/metrics', undefined, {raw: true})]);
    const m = parseMetrics(text);
    members(st);
    facts(st, m);
    elections(st, m);
    certs(m);
    sample(m);
    ui.status.textContent = 'Updated ' + new Date().toLocaleTimeString() +
      (st.progress_from ? `; applied, lag and contact as leader ${st.progress_from} sees them.` : '; no leader answered, so applied, lag and contact are unknown.');
    ui.status.classList.remove('error');
  } catch (e) {
    ui.status.textContent = 'Could not reach the node: ' + e.message;
    ui.status.classList.add('error');
  }
}

// members draws one row per member. Applied index, lag and last contact
// are the leader's view (progress_from), the same on every node; a member
// gossip does not see alive, or the leader has not heard from lately, is
// down (red).
function members(st) {
  ui.members.replaceChildren(...st.members.map((m) => {
    const p = m.progress;
    const up = m.health === 'alive' && !p?.stale;
    const v = m.versions;
    const health = [m.health, p?.stale ? 'no contact with the leader' : '', m.catching_up ? 'catching up' : ''].filter(Boolean).join(', ');
    return el('tr', {class: up ? 'up' : 'down', 'data-member': m.id},
      el('th', {scope: 'row'}, m.id + (m.self ? ' (this node)' : ''), el('div', {class: 'sub'}, m.address)),
      el('td', {}, m.leader ? 'leader' : 'follower'),
      el('td', {}, m.suffrage === 'Voter' ? 'voter' : 'non-voter'),
      el('td', {class: 'health'}, el('span', {class: 'dot', 'aria-hidden': 'true'}), health),
      el('td', {class: 'applied'}, p?.applied_index !== undefined ? String(p.applied_index) : '—'),
      el('td', {class: 'lag'}, p?.lag !== undefined ? String(p.lag) : '—'),
      el('td', {class: 'contact'}, contact(m, p)),
      el('td', {}, v?.release || '—'),
      el('td', {}, v ? `entry ${v.entry_format}, snapshot ${v.snapshot_format}` : '—'));
  }));
}

// contact says when the leader last heard from a member.
function contact(m, p) {
  if (m.leader) return 'is the leader';
  const ms = p?.last_contact_ms;
  if (ms === undefined) return p ? 'not yet' : '—';
  return ms < 1000 ? `${ms} ms ago` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s ago`;
}

function facts(st, m) {
  const s = st.last_snapshot;
  const rows = [
    ['Node', st.node_id], ['Role', st.role], ['Leader', st.leader || 'none'], ['Term', st.term],
    ['Commit index', st.commit_index], ['Applied index', st.applied_index],
    ['Last contact with the leader', st.raft?.last_contact ?? '—'], ['Health', st.health],
    ['Last snapshot', s ? `index ${s.index}, term ${s.term}` + (s.at ? `, ${new Date(s.at).toLocaleString()}` : '') + (s.size_bytes ? `, ${(s.size_bytes / 1024).toFixed(0)} KiB` : '') : 'none yet'],
    ['Forwarded writes', st.forwarded_writes],
    ['Leader changes seen', one(m, 'arbor_raft_leader_changes_total') ?? '—'],
  ];
  ui.node.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]));
}

function elections(st) {
  if (st.term !== ui.term || st.leader !== ui.leader) {
    ui.elections.prepend(el('li', {}, `${new Date().toLocaleTimeString()}: term ${st.term}, leader ${st.leader || 'none'}`));
    ui.term = st.term;
    ui.leader = st.leader;
    while (ui.elections.children.length > 10) ui.elections.lastChild.remove();
  }
}

function certs(m) {
  const now = Date.now() / 1000;
  const list = m.filter((x) => x.name === 'arbor_certificate_expiry_timestamp_seconds');
  ui.certs.replaceChildren(...(list.length ? list.map((c) => {
    const days = (c.value - now) / 86400;
    const what = Object.entries(c.labels).map(([k, v]) => `${k}=${v}`).join(', ') || 'certificate';
    return el('li', {class: days < 30 ? 'bad' : ''}, `${what}: expires ${new Date(c.value * 1000).toLocaleDateString()} (${days.toFixed(0)} days)`);
  }) : [el('li', {}, 'No certificate metrics on this node.')]));
}

// sample turns counters into rates since the previous sample.
function sample(m) {
  const t = Date.now();
  const reqs = m.filter((x) => x.name === 'arbor_http_requests_total');
  const sum = (f) => reqs.filter(f).reduce((a, x) => a + x.value, 0);
  const cur = {
    t,
    reads: sum((x) => x.labels.method === 'GET'),
    writes: sum((x) => ['PUT', 'POST', 'PATCH', 'DELETE'].includes(x.labels.method)),
    buckets: buckets(m),
  };
  const prev = ui.prev;
  ui.prev = cur;
  const push = (k, v) => {
    const s = ui.series[k];
    s.push({t, v});
    while (s.length && s[0].t < t - KEEP) s.shift();
    ui.charts[k].draw(s);
  };
  push('streams', one(m, 'arbor_stream_open') ?? 0);
  if (!prev) return;
  const dt = (t - prev.t) / 1000;
  push('reads', Math.max(0, cur.reads - prev.reads) / dt);
  push('writes', Math.max(0, cur.writes - prev.writes) / dt);
  push('p99', p99(prev.buckets, cur.buckets) * 1000);
}

// buckets sums the request-duration histogram over methods: le → count.
function buckets(m) {
  const out = new Map();
  for (const x of m) {
    if (x.name !== 'arbor_http_request_duration_seconds_bucket') continue;
    const le = x.labels.le === '+Inf' ? Infinity : Number(x.labels.le);
    out.set(le, (out.get(le) ?? 0) + x.value);
  }
  return out;
}

// p99 is the bucket bound below which 99% of the requests between two
// samples finished (0 when there were none).
function p99(a, b) {
  const les = [...b.keys()].sort((x, y) => x - y);
  const total = (b.get(Infinity) ?? 0) - (a.get(Infinity) ?? 0);
  if (total <= 0) return 0;
  for (const le of les) {
    if ((b.get(le) ?? 0) - (a.get(le) ?? 0) >= 0.99 * total) return Number.isFinite(le) ? le : les[les.length - 2] ?? 0;
  }
  return 0;
}

const one = (m, name) => m.find((x) => x.name === name)?.value;

// parseMetrics reads the Prometheus text format: name{labels} value.
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({name: m[1], labels, value: Number(m[3])});
  }
  return out;
}
