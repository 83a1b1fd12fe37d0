// A small SVG line chart of one series over time: no library.
import {el} from './api.js';

const NS = 'http://www.w3.org/2000/svg';
const svg = (tag, attrs) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
};

// chart returns {node, draw(points)} for points [{t, v}] (t in ms).
export function chart(id, title, unit) {
  const W = 300, H = 90;
  const box = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, class: 'chart', preserveAspectRatio: 'none'});
  const line = svg('polyline', {fill: 'none', class: 'line', 'stroke-width': '2', 'vector-effect': 'non-scaling-stroke'});
  const grid = svg('line', {x1: 0, x2: W, y1: H - 1, y2: H - 1, class: 'axis'});
  box.append(grid, line);
  const now = el('span', {class: 'now', id: id + '-now'}, '–');
  const max = el('span', {class: 'max'});
  const node = el('figure', {class: 'chart-card', id},
    el('figcaption', {}, el('span', {}, title), ' ', now), box, max);
  return {
    node,
    draw(points) {
      if (!points.length) return;
      const t1 = points[points.length - 1].t, t0 = Math.min(points[0].t, t1 - 1000); // the series keeps 5 minutes
      const top = Math.max(...points.map((p) => p.v), 1e-9);
      line.setAttribute('points', points.map((p) =>
        `${((p.t - t0) / (t1 - t0) * W).toFixed(1)},${(H - 2 - (p.v / top) * (H - 6)).toFixed(1)}`).join(' '));
      const last = points[points.length - 1].v;
      now.textContent = fmt(last) + ' ' + unit;
      max.textContent = `peak ${fmt(top)} ${unit} over the last 5 minutes`;
      box.setAttribute('aria-label', `${title}: now ${fmt(last)} ${unit}, peak ${fmt(top)}`);
    },
  };
}

const fmt = (v) => (Number.isInteger(v) ? String(v) : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
