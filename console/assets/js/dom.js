// dom.js: building elements. Every value goes in as text (a Text node, textContent or a
// property), never as HTML; no inline style (the CSP forbids it): classes only.

/**
 * h makes an element: props are attributes (class, for, aria-*, ...), on<event>
 * listeners, or the properties value, checked, disabled, hidden; kids are nodes or
 * values shown as text.
 */
export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden') el[k] = v;
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const c of kids) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** replace empties el and puts kids in it. */
export function replace(el, ...kids) {
  el.replaceChildren();
  append(el, kids);
  return el;
}

let ids = 0;
/** field is a labelled input: [label, input] sharing a fresh id. */
export function field(label, input, hint) {
  const id = 'f' + (++ids);
  input.id = id;
  const kids = [h('label', { for: id }, label), input];
  if (hint) {
    const hid = id + 'h';
    input.setAttribute('aria-describedby', hid);
    kids.push(h('small', { id: hid, class: 'hint' }, hint));
  }
  return h('div', { class: 'field' }, kids);
}

/** table renders rows (objects) under columns [{title, get(row, index) -> value|Node, num}]. */
export function table(caption, columns, rows, onRow) {
  const head = h('tr', null, columns.map(c => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.title)));
  const body = rows.map((r, i) => {
    const tr = h('tr', null, columns.map(c => h('td', { class: c.num ? 'num' : null }, c.get(r, i))));
    if (onRow) {
      tr.tabIndex = 0;
      tr.classList.add('clickable');
      tr.addEventListener('click', () => onRow(r));
      tr.addEventListener('keydown', e => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onRow(r); } });
    }
    return tr;
  });
  return h('table', null, h('caption', null, caption), h('thead', null, head), h('tbody', null, body));
}

export const fmt = {
  int: n => (n ?? 0).toLocaleString('en-US'),
  usd: n => '$' + (n ?? 0).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: n && n < 0.01 ? 6 : 4 }),
  ms: n => (n ?? 0).toLocaleString('en-US') + ' ms',
  time: s => s ? new Date(s).toLocaleString('en-GB', { hour12: false }) : '—',
  // when is a time of today as its time of day, else its date and time.
  when: s => {
    if (!s) return '—';
    const d = new Date(s);
    return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString('en-GB', { hour12: false })
      : d.toLocaleString('en-GB', { hour12: false, day: '2-digit', month: 'short', hour: '2-digit', minute: '2-digit' });
  },
  pct: x => (100 * (x || 0)).toFixed(1) + '%',
};

/** toast tells the result of an action (a live region). */
export function toast(msg, bad) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.classList.toggle('bad', !!bad);
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 5000);
}
