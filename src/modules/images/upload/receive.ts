import type { Config } from '../../../config'
import { ServerStopping } from '../../../errors'
import {
  discardFiles,
  type MultipartLimits,
  type ReceivedUpload,
  tooManyFiles,
  type UploadSource,
} from '../../../http/multipart'
import { fetchToFile } from '../../../net/fetch-url'
import type { AdmittedUpload } from '../limits'
import type { UploadAdmission, UploadOptions } from './admit'

/**
 * Step 2, receive: a door's source (a multipart body, its `url` fields, a Chevereto `source`) writes the files to temp
 * files under the policy's limits, once the upload is admitted. A finished tus upload or an imported file arrives
 * received already and starts at the inspect step.
 */

/** The caller's options, or how a door that names its caller in the body (Chevereto's `key`) decides them. */
export type ChooseOptions = UploadOptions | ((fields: Record<string, string>) => UploadOptions | Promise<UploadOptions>)

/**
 * A door's upload, admitted as soon as its caller is known: `admitKnown` before a byte of the body is read when the
 * door knows its caller; otherwise `receive` admits it when the source asks for its limits, before its first file.
 * `release` ends its share of the admission (call it in a `finally`).
 */
export function admittedDoor(admission: UploadAdmission, tmpDir: string, choose: ChooseOptions) {
  let opts = typeof choose === 'function' ? null : choose
  let admitted: AdmittedUpload | null = null
  return {
    async admitKnown() {
      if (opts) admitted = await admission.admit(opts.policy, opts.ip)
    },
    async receive(source: UploadSource) {
      // No refusal by the declared Content-Length: past the largest legal body it cannot tell a file too large (413)
      // from one file too many (400), which can come after any number of bytes. The stream decides, in arrival order,
      // having read at most maxFiles files of maxFileSize; a chunked body could skip such a check anyway.
      const { files, fields } = await source(async (early) => {
        if (!opts) {
          opts = await (choose as Exclude<ChooseOptions, UploadOptions>)(early)
          admitted = await admission.admit(opts.policy, opts.ip)
        }
        return { tmpDir, maxFiles: opts.policy.maxFiles, maxFileSize: opts.policy.maxFileSize }
      })
      if (!opts || !admitted) throw new Error('upload: the source never asked for its limits')
      return { files, fields, opts, admitted }
    },
    release() {
      admitted?.release()
    },
  }
}

/**
 * `source` plus the files its `url` fields name, fetched (src/net/fetch-url.ts) once the upload is let in: counted
 * with the files against the per-upload count, each under the per-file limit, after the files in the answer. All or
 * nothing: one URL that fails refuses the upload, with no temp file left.
 */
export function withUrls(urlUploads: Config['urlUploads'], source: UploadSource): UploadSource {
  return async (limitsFor) => {
    let decided: MultipartLimits | undefined
    const received = await source(async (fields) => {
      decided = await limitsFor(fields)
      return decided
    })
    const urls = received.values?.url ?? []
    if (urls.length === 0) return received
    // Asked for by every source before it answers (a body with no file included).
    const limits = decided!
    try {
      if (received.files.length + urls.length > limits.maxFiles) throw tooManyFiles(limits.maxFiles)
      const options = { tmpDir: limits.tmpDir, maxBytes: limits.maxFileSize, ...urlUploads }
      const results = await Promise.allSettled(urls.map((url) => fetchToFile(url, options)))
      const fetched = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
      const failure = results.find((r) => r.status === 'rejected')
      if (failure) {
        await discardFiles(fetched)
        throw failure.reason
      }
      return { ...received, files: [...received.files, ...fetched] }
    } catch (error) {
      await discardFiles(received.files)
      throw error
    }
  }
}

/**
 * The uploads whose bodies are arriving, so a shutdown past its deadline can answer them (503, ServerStopping) rather
 * than wait for bodies that may take minutes. A cut upload's body goes on arriving until its connection closes; what
 * it received then is removed, so no temp file outlives it.
 */
export function arrivingBodies() {
  const cuts = new Set<() => Promise<void>>()
  return {
    /** `receiving`, unless the shutdown cuts it first. */
    async receive<T extends ReceivedUpload>(receiving: Promise<T>): Promise<T> {
      let cutNow = () => {}
      const cut = new Promise<never>((_, reject) => {
        cutNow = () => reject(new ServerStopping())
      })
      const cutAndClean = async () => {
        cutNow()
        // Its files, whether its body ends (interrupted: the receiver removes them) or completes after all.
        await receiving.then(
          (received) => discardFiles(received.files),
          () => {},
        )
      }
      cuts.add(cutAndClean)
      try {
        return await Promise.race([receiving, cut])
      } finally {
        cuts.delete(cutAndClean)
      }
    },
    count: () => cuts.size,
    /** Answers every upload arriving now; `cleaned` once their temp files are gone (their connections closed). */
    cut() {
      const cutting = [...cuts].map((cutAndClean) => cutAndClean())
      cuts.clear()
      return { uploads: cutting.length, cleaned: Promise.all(cutting) }
    },
  }
}
