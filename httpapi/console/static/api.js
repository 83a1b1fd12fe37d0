// The console's only way to the node: its public REST and SSE API, with
// the signed-in credential. Nothing here has privileges of its own.
const KEY = 'arbor.credential';

export const session = {
  get token() { return sessionStorage.getItem(KEY) || ''; },
  set token(t) { t ? sessionStorage.setItem(KEY, t) : sessionStorage.removeItem(KEY); },
  admin: false,
};

// ApiError carries the node's error text and status.
export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// encodePath turns "/a/b c" into "/a/b%20c" segment by segment.
export function encodePath(path) {
  return '/' + path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
}

// dataURL is the REST URL of a data path with query parameters.
export function dataURL(path, params = {}) {
  const p = encodePath(path);
  const q = new URLSearchParams(params).toString();
  return (p === '/' ? '/' : p) + '.json' + (q ? '?' + q : '');
}

// request sends one REST request; the answer's JSON (or text) is returned.
export async function request(method, url, body, {raw = false} = {}) {
  const headers = {};
  if (session.token) headers.Authorization = 'Bearer ' + session.token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(url, {method, headers, body, cache: 'no-store'});
  const text = await res.text();
  if (!res.ok) {
    let msg = text;
    try { msg = JSON.parse(text).error || text; } catch { /* plain text */ }
    throw new ApiError(res.status, msg.trim() || res.statusText);
  }
  if (raw) return text;
  return text === '' ? null : JSON.parse(text);
}

// stream opens an SSE stream of url. EventSource cannot send headers, so
// the credential goes in ?auth=; the node never logs request URLs.
export function stream(url, handlers) {
  const u = new URL(url, location.href);
  if (session.token) u.searchParams.set('auth', session.token);
  const es = new EventSource(u.pathname + u.search);
  for (const name of ['put', 'patch']) {
    es.addEventListener(name, (e) => handlers.change(name, JSON.parse(e.data)));
  }
  for (const name of ['cancel', 'auth_revoked']) {
    es.addEventListener(name, (e) => { es.close(); handlers.end?.(name, JSON.parse(e.data)); });
  }
  es.onerror = () => handlers.error?.();
  return es;
}

// el builds an element: el('button', {class: 'x', onclick}, 'text', child).
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k !== undefined && k !== null) e.append(k);
  }
  return e;
}

// confirmDialog asks a yes/no question in the page's own dialog.
export function confirmDialog(text, okLabel = 'Delete') {
  const d = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  d.returnValue = '';
  d.showModal();
  return new Promise((resolve) => d.addEventListener('close', () => resolve(d.returnValue === 'ok'), {once: true}));
}
