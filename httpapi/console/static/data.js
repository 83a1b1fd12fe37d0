// The data viewer and editor. Each expanded node shows one page of its
// children from a query stream (orderBy="$key", limitToFirst, startAfter),
// so a node with a million children is never loaded whole, and its rows
// change live, flashing, as any client writes.
import {request, stream, dataURL, encodePath, el, confirmDialog} from './api.js';
import {queryPanel} from './query.js';

export const PAGE = 50;

let view = null; // {root, streams}

const join = (path, key) => (path === '/' ? '' : path) + '/' + key;
const isObj = (v) => v !== null && typeof v === 'object';

// show draws the tree rooted at path.
export function show(section, path) {
  hide();
  section.replaceChildren();
  const status = el('p', {class: 'status', role: 'status', id: 'data-status'});
  const crumbs = el('nav', {'aria-label': 'Path', class: 'crumbs'});
  let acc = '';
  crumbs.append(el('a', {href: '#/data/'}, 'root'));
  for (const k of path.split('/').filter(Boolean)) {
    acc += '/' + k;
    crumbs.append(' / ', el('a', {href: '#/data' + encodePath(acc)}, k));
  }
  const go = el('input', {id: 'goto', 'aria-label': 'Go to path', placeholder: '/path/to/node', value: path});
  const goForm = el('form', {class: 'row', onsubmit: (e) => { e.preventDefault(); location.hash = '#/data' + encodePath(go.value); }},
    go, el('button', {type: 'submit'}, 'Go'));
  const treeEl = el('ul', {role: 'tree', class: 'tree', 'aria-label': 'Data at ' + path});
  view = {streams: new Set(), status};
  section.append(el('h1', {}, 'Data'), crumbs, goForm, status,
    el('div', {class: 'split'}, el('div', {class: 'card'}, treeEl), queryPanel(path)));
  const root = new TreeNode(path, path === '/' ? '/' : path.split('/').pop(), true, 0, true);
  treeEl.append(root.li);
  root.expand();
}

export function hide() {
  if (!view) return;
  for (const s of view.streams) s.close();
  view = null;
}

function say(msg, bad = false) {
  if (!view) return;
  view.status.textContent = msg;
  view.status.classList.toggle('error', bad);
}

async function run(what, fn) {
  try {
    await fn();
    say(what + ': done');
  } catch (e) {
    say(what + ' failed: ' + e.message, true);
  }
}

// literal renders a leaf as JSON (strings quoted), so types stay visible.
const literal = (v) => JSON.stringify(v);

// typeOf names a leaf's type for the editor.
const typeOf = (v) => (v === null ? 'null' : typeof v === 'object' ? 'json' : typeof v);

// encodeAs turns editor text into the JSON body of its type; a number is
// sent as typed, so 5 stays an integer and "5" as a string stays a string.
export function encodeAs(type, text) {
  switch (type) {
    case 'string': return JSON.stringify(text);
    case 'number':
      if (text.trim() === '' || !Number.isFinite(Number(text))) throw new Error('not a number: ' + text);
      JSON.parse(text.trim());
      return text.trim();
    case 'boolean':
      if (text !== 'true' && text !== 'false') throw new Error('a boolean is true or false');
      return text;
    case 'null': return 'null';
    default: JSON.parse(text); return text;
  }
}

function valueEditor(initialType, initialText, onSave, onCancel, label) {
  const input = el('input', {'aria-label': label + ' value', value: initialText, class: 'value-input'});
  const type = el('select', {'aria-label': label + ' type'},
    ['string', 'number', 'boolean', 'null', 'json'].map((t) => el('option', {value: t, selected: t === initialType}, t)));
  const save = async () => {
    let body;
    try { body = encodeAs(type.value, input.value); } catch (e) { say(e.message, true); input.focus(); return; }
    await onSave(body);
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); save(); }
    if (e.key === 'Escape') { e.preventDefault(); onCancel(); }
  });
  return {form: el('span', {class: 'editor'}, input, type,
    el('button', {type: 'button', onclick: save}, 'Save'),
    el('button', {type: 'button', onclick: onCancel}, 'Cancel')), input};
}

// TreeNode is one row of the tree: a leaf (editable in place) or an object
// (expandable, one page of children at a time).
class TreeNode {
  constructor(path, key, value, depth, object) {
    this.path = path;
    this.key = key;
    this.value = value; // true for an object, else the leaf
    this.object = object;
    this.depth = depth;
    this.children = new Map();
    this.cursors = []; // startAfter keys of the pages before this one
    this.li = el('li', {role: 'treeitem', 'data-path': path, 'data-key': key});
    this.render();
  }

  render() {
    const row = el('div', {class: 'node'});
    const name = this.depth === 0 ? (this.path === '/' ? 'root' : this.key) : this.key;
    if (this.object) {
      const open = Boolean(this.es);
      this.li.setAttribute('aria-expanded', String(open));
      row.append(el('button', {type: 'button', class: 'toggle', 'aria-label': (open ? 'Collapse ' : 'Expand ') + name,
        onclick: () => (this.es ? this.collapse() : this.expand())}, open ? '▾' : '▸'));
      row.append(el('a', {class: 'key', href: '#/data' + encodePath(this.path)}, name));
    } else {
      this.li.removeAttribute('aria-expanded');
      row.append(el('span', {class: 'toggle-pad'}), el('span', {class: 'key'}, name), ': ');
      row.append(el('button', {type: 'button', class: 'value t-' + typeOf(this.value), 'aria-label': `Edit ${name}, ${literal(this.value)}`,
        onclick: () => this.edit()}, literal(this.value)));
    }
    row.append(this.actions());
    this.row?.replaceWith(row);
    if (!this.row) this.li.prepend(row);
    this.row = row;
  }

  actions() {
    const box = el('span', {class: 'actions'});
    const name = this.key;
    if (this.object || this.depth === 0) {
      box.append(el('button', {type: 'button', 'aria-label': 'Add a child to ' + name, onclick: () => this.addForm()}, '+'));
      box.append(el('button', {type: 'button', 'aria-label': 'Export ' + name + ' as JSON', onclick: () => this.exportJSON()}, 'Export'));
      const file = el('input', {type: 'file', accept: 'application/json,.json', hidden: true, onchange: () => this.importJSON(file)});
      box.append(file, el('button', {type: 'button', 'aria-label': 'Import JSON into ' + name, onclick: () => file.click()}, 'Import'));
    }
    if (this.path !== '/') {
      box.append(el('button', {type: 'button', class: 'danger', 'aria-label': 'Delete ' + name, onclick: () => this.remove()}, '✕'));
    }
    return box;
  }

  edit() {
    const ed = valueEditor(typeOf(this.value), typeof this.value === 'string' ? this.value : literal(this.value),
      (body) => run('Save ' + this.path, async () => { await request('PUT', dataURL(this.path), body); this.render(); }),
      () => this.render(), this.key);
    this.row.querySelector('.value').replaceWith(ed.form);
    ed.input.focus();
    ed.input.select();
  }

  addForm() {
    this.li.querySelector(':scope > .add')?.remove();
    const key = el('input', {'aria-label': 'New key', placeholder: 'key (empty: push)', class: 'key-input'});
    const ed = valueEditor('string', '', async (body) => {
      await run('Add to ' + this.path, async () => {
        if (key.value) await request('PUT', dataURL(join(this.path, key.value)), body);
        else await request('POST', dataURL(this.path), body);
      });
      form.remove();
      if (!this.es) this.expand();
    }, () => form.remove(), 'New');
    const form = el('div', {class: 'add'}, key, ed.form);
    this.row.after(form);
    key.focus();
  }

  async remove() {
    if (!(await confirmDialog(`Delete ${this.path} and everything below it?`))) return;
    await run('Delete ' + this.path, () => request('DELETE', dataURL(this.path)));
  }

  async exportJSON() {
    await run('Export ' + this.path, async () => {
      const text = await request('GET', dataURL(this.path, {format: 'export'}), undefined, {raw: true});
      const a = el('a', {href: URL.createObjectURL(new Blob([text], {type: 'application/json'})),
        download: (this.path === '/' ? 'root' : this.key) + '.json'});
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    });
  }

  async importJSON(input) {
    const f = input.files[0];
    input.value = '';
    if (!f) return;
    const text = await f.text();
    try { JSON.parse(text); } catch { say('Import: ' + f.name + ' is not JSON', true); return; }
    if (!(await confirmDialog(`Replace ${this.path} with the contents of ${f.name}?`, 'Replace'))) return;
    await run('Import into ' + this.path, () => request('PUT', dataURL(this.path), text));
  }

  // expand opens a stream on the node's current page: its first PAGE
  // children by key after the page's cursor (one more tells whether a
  // next page exists). A shallow read would say only that each child
  // exists (every child becomes true), not a leaf's value, so the page
  // stream carries the values of its children.
  expand() {
    this.collapse(false);
    const params = {orderBy: '"$key"', limitToFirst: String(PAGE + 1)};
    const after = this.cursors[this.cursors.length - 1];
    if (after !== undefined) params.startAfter = JSON.stringify(after);
    this.first = true;
    this.es = stream(dataURL(this.path, params), {
      change: (kind, msg) => this.change(kind, msg),
      end: (name, reason) => say(`${this.path}: ${name} ${reason}`, true),
      error: () => say(`${this.path}: stream interrupted, reconnecting…`, true),
    });
    view?.streams.add(this.es);
    if (!this.ul) {
      this.ul = el('ul', {role: 'group'});
      this.pager = el('div', {class: 'pager'});
      this.li.append(this.ul, this.pager);
    }
    this.ul.hidden = this.pager.hidden = false;
    this.render();
  }

  collapse(draw = true) {
    if (this.es) {
      this.es.close();
      view?.streams.delete(this.es);
      this.es = null;
    }
    for (const c of this.children.values()) c.collapse(false);
    if (draw && this.ul) {
      this.ul.hidden = this.pager.hidden = true;
      this.render();
    }
  }

  // change applies one stream frame to the page.
  change(kind, {path, data}) {
    const segs = path.split('/').filter(Boolean);
    const changed = new Map();
    if (segs.length === 0 && kind === 'put') {
      if (!isObj(data)) {
        // The node became a leaf (or was deleted): its parent's stream
        // redraws it; show it as it is meanwhile.
        this.children.clear();
        this.ul.replaceChildren();
        this.pager.replaceChildren();
        if (data !== null && this.depth > 0) { this.object = false; this.value = data; this.collapse(false); this.render(); }
        return;
      }
      for (const k of this.children.keys()) if (!(k in data)) changed.set(k, null);
      for (const [k, v] of Object.entries(data)) changed.set(k, v);
    } else if (segs.length === 0) {
      for (const [k, v] of Object.entries(data)) changed.set(k, v);
    } else {
      changed.set(segs[0], segs.length === 1 && !isObj(data) ? data : {});
    }
    this.apply(changed, !this.first);
    this.first = false;
  }

  apply(changed, flash) {
    for (const [k, v] of changed) {
      let c = this.children.get(k);
      if (v === null) {
        if (c) { c.collapse(false); c.li.remove(); this.children.delete(k); }
        continue;
      }
      const object = isObj(v);
      const value = object ? true : v;
      if (!c) {
        c = new TreeNode(join(this.path, k), k, value, this.depth + 1, object);
        this.children.set(k, c);
        this.insert(c);
      } else if (c.object !== object || (!object && c.value !== value)) {
        if (!object) c.collapse(false);
        c.object = object;
        c.value = value;
        c.render();
      }
      if (flash) c.flash();
    }
    this.paginate();
  }

  insert(c) {
    for (const o of this.ul.children) {
      if (compareKeys(o.dataset.key, c.key) > 0) { this.ul.insertBefore(c.li, o); return; }
    }
    this.ul.append(c.li);
  }

  // paginate shows PAGE children and the buttons to the pages around.
  paginate() {
    const keys = [...this.children.keys()].sort(compareKeys);
    for (const [i, k] of keys.entries()) {
      this.children.get(k).li.hidden = i >= PAGE;
    }
    this.pager.replaceChildren();
    if (this.cursors.length === 0 && keys.length <= PAGE) return;
    const shown = keys.slice(0, PAGE);
    this.pager.append(
      el('button', {type: 'button', disabled: this.cursors.length === 0, onclick: () => { this.cursors.pop(); this.reload(); }}, '‹ Previous'),
      el('span', {class: 'page-info'}, `Page ${this.cursors.length + 1}: ${shown[0] ?? ''} … ${shown[shown.length - 1] ?? ''}`),
      el('button', {type: 'button', class: 'next', disabled: keys.length <= PAGE,
        onclick: () => { this.cursors.push(shown[shown.length - 1]); this.reload(); }}, 'Next ›'));
  }

  reload() {
    for (const c of this.children.values()) { c.collapse(false); c.li.remove(); }
    this.children.clear();
    this.expand();
    this.pager.querySelector('button:not([disabled])')?.focus();
  }

  flash() {
    this.row.classList.remove('flash');
    void this.row.offsetWidth; // restart the animation
    this.row.classList.add('flash');
  }
}

// compareKeys orders keys as the database does: integer-looking keys
// first, numerically, then the rest as strings.
export function compareKeys(a, b) {
  const int = /^-?(0|[1-9][0-9]{0,9})$/;
  const ai = int.test(a) && Math.abs(Number(a)) < 2 ** 31, bi = int.test(b) && Math.abs(Number(b)) < 2 ** 31;
  if (ai && bi) return Number(a) - Number(b);
  if (ai !== bi) return ai ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
