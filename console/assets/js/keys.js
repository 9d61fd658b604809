// keys.js: the Keys page: list with spend against budget, create (the secret shown once),
// edit, rotate, disable, enable, delete; and the teams: database teams created, edited
// (models, limits, budget) and deleted, config-file teams read-only. It is the admin
// API's client, nothing more.
import { api, query } from './api.js';
import { h, replace, field, table, fmt, toast } from './dom.js';

const list = s => s.split(',').map(x => x.trim()).filter(Boolean);
const num = v => v === '' ? 0 : Number(v);

export async function keysPage(root) {
  const status = h('div', { class: 'panel', hidden: true, 'aria-live': 'polite' });
  const listEl = h('div');
  const edit = h('div');
  root.append(h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => showForm(null) }, 'Create key'),
    h('button', { type: 'button', onclick: () => showTeamForm(null) }, 'Create team')), status, edit, listEl);

  async function load() {
    const day = new Date(Date.now() + 86400e3).toISOString().slice(0, 10);
    const from = new Date(Date.now() - 30 * 86400e3).toISOString().slice(0, 10);
    const [keys, usage, teams, teamUsage] = await Promise.all([api('GET', '/admin/v1/keys'),
      api('GET', '/admin/v1/usage' + query({ group_by: 'key', from, to: day })), api('GET', '/admin/v1/teams'),
      api('GET', '/admin/v1/usage' + query({ group_by: 'team', from, to: day }))]);
    const spend = new Map((usage.data || []).map(u => [u.key, u]));
    const teamSpend = new Map((teamUsage.data || []).map(u => [u.team, u]));
    replace(listEl, table('Client keys; spend and tokens over the last 30 days from the ledger', [
      { title: 'Name', get: k => h('span', { class: 'mono' }, k.name) },
      { title: 'Source', get: k => k.source },
      { title: 'Team', get: k => k.team || '—' },
      { title: 'Models', get: k => (k.models || []).join(', ') || '—' },
      { title: 'Spend / budget', get: k => spendCell(k, spend.get(k.name)) },
      { title: 'Limits', get: k => limitsText(k.limits) },
      { title: 'Expires', get: k => fmt.time(k.expires_at) },
      { title: 'State', get: k => k.disabled ? h('span', { class: 'badge bad' }, 'disabled') : h('span', { class: 'badge ok' }, 'active') },
      { title: 'Actions', get: k => k.read_only ? h('small', null, 'config file (read-only)') : actions(k) },
    ], keys.data || []),
    table('Teams: their models, limits and budget are shared by their keys, on top of each key\'s own; spend over the last 30 days', [
      { title: 'Team', get: t => h('span', { class: 'mono' }, t.name) },
      { title: 'Source', get: t => t.source },
      { title: 'Keys', get: t => (t.keys || []).join(', ') || '—' },
      { title: 'Models', get: t => (t.models || []).join(', ') || '—' },
      { title: 'Spend / budget', get: t => spendCell(t, teamSpend.get(t.name)) },
      { title: 'Limits', get: t => limitsText(t.limits) },
      { title: 'Requests', num: true, get: t => fmt.int((teamSpend.get(t.name) || {}).requests) },
      { title: 'Actions', get: t => teamActions(t) },
    ], teams.data || []));
  }

  function teamActions(t) {
    const act = (label, fn) => h('button', { type: 'button', class: 'small', onclick: fn, 'aria-label': label + ' team ' + t.name }, label);
    if (t.source === 'config') return h('small', null, 'config file (read-only)');
    if (t.source === 'label') return h('span', { class: 'row-actions' }, act('Make a team', () => showTeamForm(null, t.name)));
    return h('span', { class: 'row-actions' },
      act('Edit', () => showTeamForm(t)),
      act('Delete', () => confirm('Delete team ' + t.name + '? Its keys keep the name, as a label, without its limits and budget.') &&
        run(() => api('DELETE', `/admin/v1/teams/${encodeURIComponent(t.name)}`), 'team ' + t.name + ' deleted')));
  }

  // showTeamForm edits database team t, or creates one (named name when given).
  function showTeamForm(t, name0) {
    const v = t || { models: [], limits: {}, budget: {} };
    const name = h('input', { name: 'team_name', value: v.name || name0 || '', required: true, disabled: !!t, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}' });
    const models = h('input', { name: 'team_models', value: (v.models || []).join(', ') });
    const policy = policyInputs('team_', 'Team ', v);
    const err = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { class: 'panel form', 'aria-label': t ? 'Edit team ' + t.name : 'Create team' },
      h('h2', null, t ? 'Edit team ' + t.name : 'Create a team'),
      h('p', null, 'A team\'s limits and budget are shared by all its keys, on top of each key\'s own.'),
      h('div', { class: 'grid' },
        field('Team name', name),
        field('Team models', models, 'comma-separated names or globs; narrows its keys\' models; empty: no narrowing'),
        policy.fields),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, t ? 'Save team' : 'Create team'),
        h('button', { type: 'button', class: 'quiet', onclick: () => edit.replaceChildren() }, 'Cancel')),
      err);
    form.addEventListener('submit', async e => {
      e.preventDefault();
      const body = { models: list(models.value), ...policy.body() };
      try {
        if (t) {
          await api('PATCH', `/admin/v1/teams/${encodeURIComponent(t.name)}`, body);
          toast('team ' + t.name + ' saved');
        } else {
          await api('POST', '/admin/v1/teams', { name: name.value.trim(), ...body });
          toast('team ' + name.value.trim() + ' created');
        }
        edit.replaceChildren();
        await load();
      } catch (x) {
        err.textContent = x.message + (x.field ? ' (' + x.field + ')' : '');
      }
    });
    replace(edit, form);
    (t || name0 ? models : name).focus();
  }

  function spendCell(k, u) {
    const cost = u ? u.cost_usd : 0;
    const b = k.budget || {};
    if (b.usd > 0) {
      return h('span', { class: 'spend' }, h('meter', { min: 0, max: b.usd, value: Math.min(cost, b.usd), 'aria-label': 'spend against budget of ' + k.name }),
        ' ' + fmt.usd(cost) + ' / ' + fmt.usd(b.usd));
    }
    return fmt.usd(cost) + (b.tokens ? ' · ' + fmt.int(u ? u.prompt_tokens + u.completion_tokens : 0) + ' / ' + fmt.int(b.tokens) + ' tokens' : '');
  }

  function actions(k) {
    const act = (label, fn) => h('button', { type: 'button', class: 'small', onclick: fn, 'aria-label': label + ' ' + k.name }, label);
    return h('span', { class: 'row-actions' },
      act('Edit', () => showForm(k)),
      act('Rotate', async () => {
        if (!confirm('Rotate the secret of ' + k.name + '? The old one keeps working for an hour.')) return;
        await run(async () => showSecret(await api('POST', `/admin/v1/keys/${encodeURIComponent(k.name)}/rotate`, { grace: '1h' }), 'rotated'));
      }),
      k.disabled
        ? act('Enable', () => run(() => api('PATCH', `/admin/v1/keys/${encodeURIComponent(k.name)}`, { disabled: false }), k.name + ' enabled'))
        : act('Disable', () => run(() => api('POST', `/admin/v1/keys/${encodeURIComponent(k.name)}/disable`), k.name + ' disabled')),
      act('Delete', () => confirm('Delete ' + k.name + '?') && run(() => api('DELETE', `/admin/v1/keys/${encodeURIComponent(k.name)}`), k.name + ' deleted')));
  }

  async function run(fn, done) {
    try {
      await fn();
      if (done) toast(done);
      await load();
    } catch (e) { toast(e.message, true); }
  }

  // showSecret shows the one-time secret of an answer {key, secret} of create or rotate.
  function showSecret(ans, verb) {
    const k = { name: ans.key.name, secret: ans.secret };
    const secret = h('input', { type: 'text', readonly: true, value: k.secret, class: 'mono secret', 'aria-label': 'secret of ' + k.name });
    const copy = h('button', { type: 'button', onclick: async () => {
      try { await navigator.clipboard.writeText(k.secret); toast('Copied'); } catch { secret.select(); toast('Select and copy the secret', true); }
    } }, 'Copy');
    replace(status, h('h2', null, 'Key ' + k.name + ' ' + verb),
      h('p', null, 'Its secret is shown this once; the gateway keeps only its SHA-256.'),
      h('div', { class: 'secret-row' }, secret, copy),
      h('button', { type: 'button', class: 'quiet', onclick: () => { status.hidden = true; status.replaceChildren(); } }, 'Done, I have stored it'));
    status.hidden = false;
    secret.focus();
    secret.select();
  }

  function showForm(k) {
    const v = k || { models: [], tools: [], limits: {}, budget: {} };
    const name = h('input', { name: 'name', value: v.name || '', required: true, disabled: !!k, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}' });
    const team = h('input', { name: 'team', value: v.team || '' });
    const models = h('input', { name: 'models', value: (v.models || []).join(', ') });
    const tools = h('input', { name: 'tools', value: (v.tools || []).join(', ') });
    const policy = policyInputs('', '', v);
    const expires = h('input', { name: 'expires', type: 'datetime-local', value: v.expires_at ? v.expires_at.slice(0, 16) : '' });
    const err = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { class: 'panel form', 'aria-label': k ? 'Edit key ' + k.name : 'Create key' },
      h('h2', null, k ? 'Edit ' + k.name : 'Create a key'),
      h('div', { class: 'grid' },
        field('Name', name), field('Team', team),
        field('Models', models, 'comma-separated names or globs (claude-*); empty: none'),
        field('Tools', tools, 'comma-separated server tools'),
        policy.fields, field('Expires (UTC)', expires)),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, k ? 'Save' : 'Create'),
        h('button', { type: 'button', class: 'quiet', onclick: () => edit.replaceChildren() }, 'Cancel')),
      err);
    form.addEventListener('submit', async e => {
      e.preventDefault();
      const body = {
        team: team.value.trim(), models: list(models.value), tools: list(tools.value), ...policy.body(),
        expires_at: expires.value ? new Date(expires.value + 'Z').toISOString().replace('.000', '') : null,
      };
      try {
        if (k) {
          await api('PATCH', `/admin/v1/keys/${encodeURIComponent(k.name)}`, body);
          toast(k.name + ' saved');
        } else {
          showSecret(await api('POST', '/admin/v1/keys', { name: name.value.trim(), ...body }), 'created');
        }
        edit.replaceChildren();
        await load();
      } catch (x) {
        err.textContent = x.message + (x.field ? ' (' + x.field + ')' : '');
      }
    });
    replace(edit, form);
    (k ? models : name).focus();
  }

  await load();
}

// policyInputs are the limits and budget of a key or team v: the labelled fields (input
// names prefix + rpm, tpm, concurrent, budget_usd, budget_tokens, budget_period; labels
// after label) and body(), their values as the admin API's limits and budget members.
function policyInputs(prefix, label, v) {
  const lim = v.limits || {}, bud = v.budget || {};
  const input = (name, value, more) => h('input', { name: prefix + name, value: value || '', ...more });
  const rpm = input('rpm', lim.requests_per_minute, { type: 'number', min: 0 });
  const tpm = input('tpm', lim.tokens_per_minute, { type: 'number', min: 0 });
  const conc = input('concurrent', lim.concurrent, { type: 'number', min: 0 });
  const usd = input('budget_usd', bud.usd, { type: 'number', min: 0, step: 'any' });
  const btok = input('budget_tokens', bud.tokens, { type: 'number', min: 0 });
  const period = input('budget_period', bud.period, { placeholder: '720h' });
  const cap = s => label ? label + s[0].toLowerCase() + s.slice(1) : s;
  return {
    fields: [field(cap('Requests per minute'), rpm), field(cap('Tokens per minute'), tpm), field(cap('Concurrent requests'), conc),
      field(cap('Budget (USD)'), usd), field(cap('Budget (tokens)'), btok), field(cap('Budget period'), period, 'e.g. 720h; default 30 days')],
    body: () => ({
      limits: { requests_per_minute: num(rpm.value), tokens_per_minute: num(tpm.value), concurrent: num(conc.value) },
      budget: { usd: num(usd.value), tokens: num(btok.value), ...(period.value.trim() ? { period: period.value.trim() } : {}) },
    }),
  };
}

function limitsText(l) {
  const p = [];
  if (l && l.requests_per_minute) p.push(fmt.int(l.requests_per_minute) + ' req/min');
  if (l && l.tokens_per_minute) p.push(fmt.int(l.tokens_per_minute) + ' tok/min');
  if (l && l.concurrent) p.push(fmt.int(l.concurrent) + ' at once');
  return p.join(' · ') || '—';
}
