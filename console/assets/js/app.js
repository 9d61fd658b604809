// app.js: the console's entry: the session, the sign-in page and the router (#/page).
import { api, setSession, whenSignedOut } from './api.js';
import { h, replace, field, toast } from './dom.js';
import { keysPage } from './keys.js';
import { requestsPage } from './requests.js';
import { overviewPage } from './overview.js';
import { usagePage } from './usage.js';
import { modelsPage } from './models.js';
import { playgroundPage } from './playground.js';

const pages = {
  overview: ['Overview', overviewPage],
  keys: ['Keys', keysPage],
  requests: ['Requests', requestsPage],
  usage: ['Usage', usagePage],
  models: ['Models and deployments', modelsPage],
  playground: ['Playground', playgroundPage],
};

const view = document.getElementById('view');
let session = null;
let leave = null; // the current page's clean-up (timers)

async function loadSession() {
  const r = await fetch('/console/session', { credentials: 'same-origin', cache: 'no-store' });
  session = r.ok ? await r.json() : null;
  setSession(session);
}

function signedOut() {
  session = null;
  setSession(null);
  route();
}
whenSignedOut(signedOut);

function signIn() {
  document.getElementById('top').hidden = true;
  const tok = h('input', { type: 'password', name: 'token', autocomplete: 'current-password', required: true });
  const err = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Agate console'),
    h('p', null, 'Sign in with an administrator token (admin.keys). Client keys are not admin tokens.'),
    field('Admin token', tok),
    h('button', { type: 'submit' }, 'Sign in'),
    err);
  form.addEventListener('submit', async e => {
    e.preventDefault();
    err.textContent = '';
    const r = await fetch('/console/session', {
      method: 'POST', credentials: 'same-origin',
      body: new URLSearchParams({ token: tok.value }),
    });
    tok.value = '';
    if (!r.ok) {
      let m = 'Sign-in failed.';
      try { m = (await r.json()).error.message; } catch { /* not JSON */ }
      err.textContent = m;
      tok.focus();
      return;
    }
    session = await r.json();
    setSession(session);
    if (!location.hash || location.hash === '#/signin') location.hash = '#/overview';
    else route();
  });
  replace(view, form);
  tok.focus();
}

async function route() {
  if (leave) { leave(); leave = null; }
  if (!session) { signIn(); return; }
  document.getElementById('top').hidden = false;
  document.getElementById('who').textContent = 'Signed in as ' + session.actor;
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.getAttribute('href') === '#/' + page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const [title, render] = pages[page];
  document.title = title + ' · Agate console';
  const root = h('section', { 'aria-labelledby': 'page-title', 'data-page': page }, h('h1', { id: 'page-title' }, title));
  replace(view, root);
  try {
    leave = (await render(root, rest.map(decodeURIComponent))) || null;
  } catch (e) {
    root.append(h('p', { class: 'error', role: 'alert' }, e.message));
  }
}

document.getElementById('signout').addEventListener('click', async () => {
  try { await api('DELETE', '/console/session'); } catch (e) { toast(e.message, true); }
  signedOut();
});
window.addEventListener('hashchange', () => { route(); view.focus(); });

await loadSession();
route();
