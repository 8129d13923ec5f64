// Passkeys (WebAuthn) in the browser: the server's JSON options in, the browser's answer out as JSON, binary fields in
// base64url both ways. Used by the login page (auth.js) and the dashboard's Security tab (dashboard-security.js).
;(() => {
  'use strict'
  if (!window.imghost) return

  function toBytes(base64url) {
    const base64 = base64url.replace(/-/g, '+').replace(/_/g, '/')
    const binary = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4))
    return Uint8Array.from(binary, (c) => c.charCodeAt(0))
  }
  function toBase64url(buffer) {
    let binary = ''
    for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte)
    return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  }
  const withIds = (list) => (list || []).map((c) => ({ ...c, id: toBytes(c.id) }))

  /** The answer's common part; `fields` names the response's binary members. */
  function credentialJSON(credential, fields) {
    const response = {}
    for (const name of fields) {
      const value = credential.response[name]
      if (value) response[name] = toBase64url(value)
    }
    return {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
      clientExtensionResults: credential.getClientExtensionResults(),
      response,
    }
  }

  /** Messages for the browser's refusals, which say little on their own. */
  function failure(error) {
    if (error && error.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out.'
    if (error && error.name === 'InvalidStateError') return 'This device already holds a passkey for your account.'
    return `The browser could not use a passkey: ${error?.message || error}`
  }

  const supported = () => typeof window.PublicKeyCredential === 'function' && !!navigator.credentials

  /** navigator.credentials.create() with the server's options; resolves to the RegistrationResponseJSON. */
  async function create(options) {
    const credential = await navigator.credentials.create({
      publicKey: {
        ...options,
        challenge: toBytes(options.challenge),
        user: { ...options.user, id: toBytes(options.user.id) },
        excludeCredentials: withIds(options.excludeCredentials),
      },
    })
    const json = credentialJSON(credential, ['clientDataJSON', 'attestationObject'])
    json.response.transports = credential.response.getTransports ? credential.response.getTransports() : []
    return json
  }

  /** navigator.credentials.get() with the server's options; resolves to the AuthenticationResponseJSON. */
  async function get(options) {
    const credential = await navigator.credentials.get({
      publicKey: {
        ...options,
        challenge: toBytes(options.challenge),
        allowCredentials: withIds(options.allowCredentials),
      },
    })
    return credentialJSON(credential, ['clientDataJSON', 'authenticatorData', 'signature', 'userHandle'])
  }

  window.imghost.passkeys = { supported, create, get, failure }
})()
