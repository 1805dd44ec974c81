// The pages' passkey script, bundled with @simplewebauthn/browser into /assets/passkeys.js
// (scripts/build.mjs; src/web/assets.ts bundles it on first use when running from the sources).
// Plain JavaScript: it runs in browsers, outside the server's type-checked code. Everything it
// shows is hidden in the HTML, so a page without JavaScript stays exactly as it is.
import {
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  startAuthentication,
  startRegistration,
} from '@simplewebauthn/browser';

/** The page's CSRF token (every page with a form has one). */
function csrfToken() {
  const input = document.querySelector('input[name="_csrf"]');
  return input ? input.value : '';
}

/** POSTs JSON to the service; answers its JSON, or throws an Error with the service's message. */
async function post(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken() },
    body: JSON.stringify(body || {}),
  });
  let data = {};
  try {
    data = await response.json();
  } catch {
    // An answer without JSON: the generic message below.
  }
  if (!response.ok) throw new Error(data.message || 'That did not work. Reload the page and try again.');
  return data;
}

function show(box, message) {
  box.textContent = message;
  box.hidden = false;
}

/** A browser dialog the user closed, or a request another one replaced: nothing to report. */
function cancelled(error) {
  return (
    error &&
    (error.name === 'AbortError' || error.name === 'NotAllowedError' || error.code === 'ERROR_CEREMONY_ABORTED')
  );
}

function signInPage(box) {
  const button = document.getElementById('passkey-sign-in');
  const errorBox = document.getElementById('passkey-error');
  const { optionsUrl, verifyUrl } = box.dataset;

  async function signIn(useBrowserAutofill) {
    const optionsJSON = await post(optionsUrl);
    const response = await startAuthentication({ optionsJSON, useBrowserAutofill });
    const result = await post(verifyUrl, response);
    window.location.assign(result.redirect);
  }

  /** Offers the passkeys in the username field's autofill, where the browser can (conditional mediation). */
  async function autofill() {
    if (!(await browserSupportsWebAuthnAutofill())) return;
    try {
      await signIn(true);
    } catch (error) {
      if (!cancelled(error)) show(errorBox, error.message);
    }
  }

  box.hidden = false;
  button.addEventListener('click', async () => {
    errorBox.hidden = true;
    button.disabled = true;
    try {
      // Starting this request ends the autofill one (SimpleWebAuthn aborts it).
      await signIn(false);
    } catch (error) {
      if (!cancelled(error)) show(errorBox, error.message);
      button.disabled = false;
      void autofill();
    }
  });
  void autofill();
}

function accountPage(box) {
  const button = document.getElementById('passkey-add');
  const nameInput = document.getElementById('new-passkey-name');
  const errorBox = document.getElementById('passkey-add-error');
  const { optionsUrl, addUrl } = box.dataset;
  box.hidden = false;
  button.addEventListener('click', async () => {
    errorBox.hidden = true;
    button.disabled = true;
    try {
      const optionsJSON = await post(optionsUrl);
      const response = await startRegistration({ optionsJSON });
      const result = await post(addUrl, { response, name: nameInput.value });
      window.location.assign(result.redirect);
    } catch (error) {
      show(errorBox, cancelled(error) ? 'No passkey was added.' : error.message);
      button.disabled = false;
    }
  });
}

if (browserSupportsWebAuthn()) {
  const signInBox = document.getElementById('passkey-box');
  if (signInBox) signInPage(signInBox);
  const addBox = document.getElementById('passkey-add-box');
  if (addBox) accountPage(addBox);
}
