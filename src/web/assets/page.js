// Small behaviours of every page, where JavaScript runs; every page works without them.
(() => {
  // A form's submit button disables itself once the form is sent, so a second click sends nothing
  // (the server keeps the forms that act safe anyway: single-use submit tokens). Disabled after the
  // browser has read the form, so the button's own name and value are still sent.
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    if (form.dataset.sent === 'yes') {
      event.preventDefault();
      return;
    }
    form.dataset.sent = 'yes';
    setTimeout(() => {
      for (const button of form.querySelectorAll('button[type="submit"], button:not([type])')) {
        button.disabled = true;
        button.setAttribute('aria-disabled', 'true');
      }
    }, 0);
  });
  // Back to the page from the history: its forms may be sent again.
  window.addEventListener('pageshow', (event) => {
    if (!event.persisted) return;
    for (const form of document.forms) {
      delete form.dataset.sent;
      for (const button of form.querySelectorAll('button')) {
        button.disabled = false;
        button.removeAttribute('aria-disabled');
      }
    }
  });

  const status = document.getElementById('copy-status');
  for (const button of document.querySelectorAll('[data-copy]')) {
    const source = document.getElementById(button.dataset.copy);
    if (!source || !navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      const text = [...source.querySelectorAll('li')].map((item) => item.textContent.trim()).join('\n');
      try {
        await navigator.clipboard.writeText(`${text}\n`);
        if (status) status.textContent = 'Copied. Paste them somewhere safe.';
      } catch {
        if (status) status.textContent = 'Could not copy. Select the codes and copy them, or download them.';
      }
    });
  }
  for (const button of document.querySelectorAll('[data-print]')) {
    button.hidden = false;
    button.addEventListener('click', () => window.print());
  }
})();

(() => {
  // A show-password button beside every password input of the page (docs/decisions/0091): it
  // switches the input between type=password and type=text and says which with aria-pressed. The
  // button exists only where this script runs; without JavaScript the input works as it is. Before a
  // form is sent its inputs become password inputs again, so the browser keeps no typed password in
  // its form history.
  for (const input of document.querySelectorAll('input[type="password"]')) {
    const field = document.createElement('div');
    field.className = 'password-field';
    input.replaceWith(field);
    field.append(input);

    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary show-password';
    button.setAttribute('aria-pressed', 'false');
    if (input.id) button.setAttribute('aria-controls', input.id);
    // Visible "Show", named "Show password": the name holds the visible word (WCAG 2.5.3).
    const hidden = document.createElement('span');
    hidden.className = 'visually-hidden';
    hidden.textContent = ' password';
    button.append('Show', hidden);
    button.addEventListener('click', () => {
      const shown = input.type === 'password';
      input.type = shown ? 'text' : 'password';
      button.setAttribute('aria-pressed', String(shown));
      input.focus();
    });
    field.append(button);

    input.form?.addEventListener('submit', () => {
      input.type = 'password';
      button.setAttribute('aria-pressed', 'false');
    });
  }
})();
