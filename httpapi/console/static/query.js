// The query box: orderBy, ranges and limits at a path, with the answer and
// how long the node took to give it.
import {request, dataURL, el} from './api.js';

const field = (id, label, attrs = {}) => [el('label', {for: id}, label), el('input', {id, ...attrs})];

export function queryPanel(path) {
  const out = el('pre', {class: 'result', id: 'q-result', tabindex: '0', 'aria-label': 'Query result'});
  const time = el('p', {class: 'status', id: 'q-time', role: 'status'});
  const form = el('form', {class: 'grid', id: 'query'},
    field('q-path', 'Path', {value: path}),
    field('q-orderBy', 'orderBy', {placeholder: '"$key", "$value" or "child"', value: '"$key"'}),
    field('q-startAt', 'startAt', {placeholder: 'JSON, e.g. "a" or 5'}),
    field('q-endAt', 'endAt', {placeholder: 'JSON'}),
    field('q-equalTo', 'equalTo', {placeholder: 'JSON'}),
    field('q-limitToFirst', 'limitToFirst', {inputmode: 'numeric', value: '10'}),
    field('q-limitToLast', 'limitToLast', {inputmode: 'numeric'}),
    el('span'), el('button', {type: 'submit'}, 'Run query'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const params = {};
    for (const k of ['orderBy', 'startAt', 'endAt', 'equalTo', 'limitToFirst', 'limitToLast']) {
      const v = form.querySelector('#q-' + k).value.trim();
      if (v) params[k] = v;
    }
    const t0 = performance.now();
    try {
      const res = await request('GET', dataURL(form.querySelector('#q-path').value, params));
      const ms = performance.now() - t0;
      const n = res !== null && typeof res === 'object' ? Object.keys(res).length : 1;
      time.textContent = `${n} result${n === 1 ? '' : 's'} in ${ms.toFixed(1)} ms`;
      time.classList.remove('error');
      out.textContent = JSON.stringify(res, null, 2);
    } catch (err) {
      time.textContent = 'Query failed: ' + err.message;
      time.classList.add('error');
      out.textContent = '';
    }
  });
  return el('div', {class: 'card'}, el('h2', {}, 'Query'), form, time, out);
}
