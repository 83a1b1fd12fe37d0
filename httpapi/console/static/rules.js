// The rules page: the rules with line numbers, saved through
// /.settings/rules.json (errors shown at the line and column the node's
// parser reports), and the playground, answered by the node's own
// evaluator through its admin-only explain endpoint.
import {request, ApiError, el} from './api.js';

const EXPLAIN = '/_/api/rules/explain';
let ui = null;

export function hide() {}

export async function show(section) {
  if (!ui) build(section);
  await load();
}

function build(section) {
  const text = el('textarea', {id: 'rules-text', spellcheck: 'false', wrap: 'off', 'aria-label': 'Rules',
    'aria-describedby': 'rules-error', autocapitalize: 'off'});
  const gutter = el('pre', {class: 'gutter', 'aria-hidden': 'true', id: 'rules-gutter'});
  const error = el('p', {id: 'rules-error', class: 'status', role: 'alert'});
  text.addEventListener('input', () => { numbers(); mark(0); });
  text.addEventListener('scroll', () => { gutter.scrollTop = text.scrollTop; });
  const editor = el('div', {class: 'card'}, el('h1', {}, 'Rules'),
    el('div', {class: 'code'}, gutter, text),
    el('div', {class: 'row'},
      el('button', {type: 'button', id: 'rules-save', onclick: () => save(false)}, 'Save'),
      el('button', {type: 'button', id: 'rules-check', onclick: () => save(true)}, 'Check'),
      el('button', {type: 'button', onclick: load}, 'Reload')),
    error);
  section.append(el('div', {class: 'split'}, editor, playground()));
  ui = {text, gutter, error};
}

async function load() {
  try {
    ui.text.value = await request('GET', '/.settings/rules.json', undefined, {raw: true});
    numbers();
    mark(0);
    status('');
  } catch (e) {
    status('Could not load the rules: ' + e.message, true);
  }
}

function numbers() {
  const n = ui.text.value.split('\n').length;
  ui.gutter.replaceChildren(...Array.from({length: n}, (_, i) => el('span', {'data-line': i + 1}, String(i + 1) + '\n')));
}

// mark highlights line n (0: none).
function mark(n) {
  for (const s of ui.gutter.querySelectorAll('.err')) s.classList.remove('err');
  if (n > 0) ui.gutter.querySelector(`[data-line="${n}"]`)?.classList.add('err');
}

function status(msg, bad = false) {
  ui.error.textContent = msg;
  ui.error.classList.toggle('error', bad);
}

// save sends the rules (dry only checks them). A parser error names its
// line and column: the line is marked and the caret put there.
async function save(dry) {
  try {
    await request('PUT', '/.settings/rules.json' + (dry ? '?dryRun=true' : ''), ui.text.value);
    mark(0);
    status(dry ? 'The rules are valid.' : 'Rules saved.');
  } catch (e) {
    const m = e instanceof ApiError && /^Line (\d+), column (\d+): /.exec(e.message);
    if (!m) { status('Save failed: ' + e.message, true); return; }
    const line = Number(m[1]), col = Number(m[2]);
    mark(line);
    status(e.message, true);
    const lines = ui.text.value.split('\n');
    let off = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) off += lines[i].length + 1;
    ui.text.focus();
    ui.text.setSelectionRange(off + col - 1, off + col - 1);
  }
}

function playground() {
  const f = (id, label, input) => [el('label', {for: id}, label), input];
  const op = el('select', {id: 'pg-op'}, el('option', {value: 'read'}, 'read'), el('option', {value: 'write'}, 'write'));
  const path = el('input', {id: 'pg-path', value: '/'});
  const uid = el('input', {id: 'pg-uid', placeholder: 'empty: signed out'});
  const claims = el('textarea', {id: 'pg-claims', rows: '2', spellcheck: 'false'}, '{}');
  const data = el('textarea', {id: 'pg-data', rows: '3', spellcheck: 'false'}, '"value"');
  const out = el('div', {id: 'pg-result', role: 'status'});
  const form = el('form', {class: 'grid', id: 'playground'},
    f('pg-op', 'Operation', op), f('pg-path', 'Path', path), f('pg-uid', 'uid', uid),
    f('pg-claims', 'Other claims (JSON)', claims), f('pg-data', 'Data to write (JSON)', data),
    el('span'), el('button', {type: 'submit'}, 'Run'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let auth = null;
    let body;
    try {
      if (uid.value) auth = {uid: uid.value, provider: 'custom', token: {...JSON.parse(claims.value || '{}'), sub: uid.value}};
      body = {op: op.value, path: path.value, auth};
      if (op.value === 'write') body.data = JSON.parse(data.value);
    } catch (err) {
      out.replaceChildren(el('p', {class: 'error'}, 'Not JSON: ' + err.message));
      return;
    }
    try {
      const res = await request('POST', EXPLAIN, JSON.stringify(body));
      out.replaceChildren(verdict(res));
    } catch (err) {
      out.replaceChildren(el('p', {class: 'error'}, err.message));
    }
  });
  return el('div', {class: 'card'}, el('h2', {}, 'Playground'),
    el('p', {class: 'note'}, 'May this user read or write this value here? The node answers with the rules in force.'),
    form, out);
}

function verdict(res) {
  const r = res.rule;
  const head = el('p', {class: res.allowed ? 'verdict ok' : 'verdict bad', id: 'pg-verdict'},
    res.allowed ? 'Allowed' : 'Denied');
  const why = r
    ? el('p', {}, `${res.allowed ? 'Granted' : 'Denied'} by `, el('code', {id: 'pg-rule'}, r.path),
      r.line ? ` (line ${r.line}): ` : ': ', el('code', {}, r.expr))
    : el('p', {id: 'pg-rule'}, 'No rule grants this: denied by default.');
  const steps = el('ol', {class: 'steps'}, res.steps.map((s) =>
    el('li', {}, el('span', {class: s.holds ? 'ok' : 'bad'}, s.holds ? 'true' : 'false'), ' ',
      el('code', {}, s.rule.path), ' at ', el('code', {}, s.at))));
  if (r?.line) mark(r.line);
  return el('div', {}, head, why, res.steps.length ? steps : '', res.default_rules ? el('p', {class: 'note'}, 'No rules were set: the defaults judged.') : '');
}
