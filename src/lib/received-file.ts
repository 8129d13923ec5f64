import { join } from 'node:path'
import { newPublicId } from './crypto'

/** A file an upload brought, in a temp file, whichever way it came (a multipart part, a tus upload, a URL, a folder). */
export interface ReceivedFile {
  /** Temporary file holding the uploaded bytes. */
  path: string
  /** Client-supplied name, untrusted: only ever shown escaped. */
  filename: string
  size: number
  sha256: string
  /** A text part received like a file (MultipartOptions.textAsFile): its bytes are text for the door to read. */
  text?: boolean
}

/** A fresh temp file name in `tmpDir` for one received file, whichever way it came (a multipart part, a URL). */
export const tempUploadPath = (tmpDir: string) => join(tmpDir, `upload-${newPublicId()}${newPublicId()}`)
