/**
 * Ready-made uploader configurations for the calling API key: a ShareX custom uploader (.sxcu) and POSIX shell
 * scripts (plain and Flameshot) that upload with curl, copy the direct link to the clipboard and print it.
 * The key secret is not stored (only its hash), so what goes in is the caller's own X-API-Key value.
 */

export interface ClientOptions {
  visibility?: 'public' | 'private'
  album?: string
}

export interface ClientContext {
  publicUrl: string
  siteName: string
  apiKey: string
  username: string
}

/** Upload fields the options turn into (multipart Arguments / curl fields). */
function uploadFields(options: ClientOptions): Record<string, string> {
  const fields: Record<string, string> = {}
  if (options.visibility) fields.visibility = options.visibility
  if (options.album) fields.album = options.album
  return fields
}

/** ShareX custom uploader, as its "Import from file" expects (ShareX 13+ format). */
export function sharexConfig(ctx: ClientContext, options: ClientOptions) {
  const fields = uploadFields(options)
  return {
    Version: '15.0.0',
    Name: `${ctx.siteName} (${ctx.username})`,
    // Images only: as a file uploader too, ShareX would send it text files and archives, which the API refuses (400).
    DestinationType: 'ImageUploader' as const,
    RequestMethod: 'POST' as const,
    RequestURL: `${ctx.publicUrl}/api/v1/upload`,
    Headers: { 'X-API-Key': ctx.apiKey },
    Body: 'MultipartFormData' as const,
    ...(Object.keys(fields).length ? { Arguments: fields } : {}),
    FileFormName: 'file' as const,
    URL: '{json:url}',
    ThumbnailURL: '{json:thumbnail}',
    // A page that deletes with one click: ShareX opens DeletionURL in the browser (the API's `delete` needs a key).
    DeletionURL: '{json:deletePage}',
    ErrorMessage: '{json:error}',
  }
}

/** A file name made only of safe characters, for Content-Disposition. */
export const attachmentName = (siteName: string, suffix: string) =>
  `${siteName.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'imghost'}${suffix}`

/** Single-quotes a value for sh: nothing inside is ever expanded. */
const shQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`

/**
 * A POSIX sh script: uploads a file (or, for Flameshot, a fresh `flameshot gui --raw` capture) with curl, copies the
 * direct link with the first clipboard tool that works (wl-copy, xclip, xsel, pbcopy, clip.exe), and prints it.
 * Without a clipboard tool the link is still printed. Text fields go through --form-string, so no value is read as a file.
 */
export function shellScript(ctx: ClientContext, options: ClientOptions, flavour: 'shell' | 'flameshot'): string {
  const fields = Object.entries(uploadFields(options))
    .map(([name, value]) => `--form-string ${shQuote(`${name}=${value}`)}`)
    .join(' ')
  const usage =
    flavour === 'flameshot'
      ? '# Usage: sh this-script            (takes a screenshot with `flameshot gui`, uploads it)\n# Bind it to a key in your desktop settings.'
      : '# Usage: sh this-script FILE       (or: some-command | sh this-script -)'
  const input =
    flavour === 'flameshot'
      ? `command -v flameshot >/dev/null 2>&1 || { echo "flameshot is not installed" >&2; exit 1; }
TMP=$(mktemp "\${TMPDIR:-/tmp}/upload.XXXXXX")
trap 'rm -f "$TMP"' EXIT
flameshot gui --raw > "$TMP" || true
# An empty capture: the selection was cancelled.
[ -s "$TMP" ] || exit 0
FILE=$TMP
NAME="screenshot-$(date +%Y%m%d-%H%M%S).png"`
      : `FILE=\${1:-}
[ -n "$FILE" ] || { echo "usage: $0 FILE   (or - for standard input)" >&2; exit 2; }
if [ "$FILE" = "-" ]; then
  TMP=$(mktemp "\${TMPDIR:-/tmp}/upload.XXXXXX")
  trap 'rm -f "$TMP"' EXIT
  cat > "$TMP"
  FILE=$TMP
  NAME=upload
else
  [ -f "$FILE" ] || { echo "no such file: $FILE" >&2; exit 2; }
  NAME=$(basename "$FILE")
fi`
  return `#!/bin/sh
# ${ctx.siteName} uploader${flavour === 'flameshot' ? ' for Flameshot' : ''}, for ${ctx.username}.
${usage}
# Needs curl. It prints the direct link and copies it with wl-copy, xclip, xsel or pbcopy, whichever works.
# This file holds your API key: keep it private. Revoke the key in the dashboard to disable it.
set -eu

ENDPOINT=${shQuote(`${ctx.publicUrl}/api/v1/upload`)}
API_KEY=${shQuote(ctx.apiKey)}

command -v curl >/dev/null 2>&1 || { echo "curl is not installed" >&2; exit 1; }

${input}

# Path and name are quoted for curl, so ; , and " in them are not read as options.
curl_quote() { printf '%s' "$1" | sed 's/[\\\\"]/\\\\&/g'; }
RESPONSE=$(curl -sS -H "X-API-Key: $API_KEY" -F "file=@\\"$(curl_quote "$FILE")\\";filename=\\"$(curl_quote "$NAME")\\"" ${fields}${fields ? ' ' : ''}"$ENDPOINT") || {
  echo "upload failed: could not reach $ENDPOINT" >&2
  exit 1
}

# The answer is compact JSON: {"success":true,"id":"...","url":"...",...} or {"error":"..."}.
field() { printf '%s' "$RESPONSE" | sed -n "s/.*\\"$1\\":\\"\\([^\\"]*\\)\\".*/\\1/p"; }
LINK=$(field url)
if [ -z "$LINK" ]; then
  echo "upload failed: $(field error)" >&2
  exit 1
fi

copy() {
  for tool in "wl-copy" "xclip -selection clipboard" "xsel --clipboard --input" "pbcopy" "clip.exe"; do
    command -v "\${tool%% *}" >/dev/null 2>&1 || continue
    if printf '%s' "$1" | $tool >/dev/null 2>&1; then return 0; fi
  done
  return 1
}
copy "$LINK" || echo "(no clipboard tool found: install wl-clipboard, xclip or xsel to copy links automatically)" >&2
${flavour === 'flameshot' ? 'command -v notify-send >/dev/null 2>&1 && notify-send "Screenshot uploaded" "$LINK" >/dev/null 2>&1 || true\n' : ''}printf '%s\\n' "$LINK"
`
}
