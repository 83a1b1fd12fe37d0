// The console's shell: sign in, then a page per route (#/data/<path>,
// #/rules, #/cluster). Rules and cluster are for the admin only.
import {session, request, ApiError, dataURL} from './api.js';
import * as data from './data.js';
import * as rulesPage from './rules.js';
import * as cluster from './cluster.js';

const pages = {data, rules: rulesPage, cluster};
let current = null;

const $ = (id) => document.getElementById(id);

// signIn checks a credential: /status answers an admin only; a data read
// tells a usable ID token (allowed or denied by the rules) from a bad one.
async function signIn(token) {
  session.token = token;
  try {
    await request('GET', '/status');
    session.admin = true;
    return;
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
  }
  session.admin = false;
  try {
    await request('GET', dataURL('/', {shallow: 'true'}));
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && e.message !== 'Permission denied') {
      session.token = '';
      throw e;
    }
  }
}

function showSignIn(message = '') {
  for (const id of Object.keys(pages)) $('page-' + id).hidden = true;
  $('nav').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('credential').focus();
}

function route() {
  if (!session.token) return showSignIn();
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('signout').hidden = false;
  $('who').textContent = session.admin ? 'Signed in as admin' : 'Signed in with an ID token';
  for (const a of document.querySelectorAll('#nav [data-admin]')) a.hidden = !session.admin;
  const hash = location.hash || '#/data/';
  let [, name, ...rest] = hash.split('/');
  if (!pages[name] || (name !== 'data' && !session.admin)) {
    name = 'data';
    rest = [];
  }
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (current && current !== pages[name]) current.hide?.();
  for (const id of Object.keys(pages)) $('page-' + id).hidden = id !== name;
  current = pages[name];
  current.show($('page-' + name), '/' + rest.map(decodeURIComponent).join('/'));
}

async function start() {
  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    $('signin-error').textContent = '';
    try {
      await signIn($('credential').value.trim());
      $('credential').value = '';
      route();
      $('main').focus();
    } catch (err) {
      showSignIn('Sign-in failed: ' + err.message);
    }
  });
  $('signout').addEventListener('click', () => {
    current?.hide?.();
    current = null;
    session.token = '';
    session.admin = false;
    showSignIn();
  });
  window.addEventListener('hashchange', route);
  if (session.token) {
    try { await signIn(session.token); } catch { session.token = ''; }
  }
  route();
}

start();
