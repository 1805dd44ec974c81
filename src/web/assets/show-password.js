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
