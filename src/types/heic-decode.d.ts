// heic-decode ships no types; what src/media/heic.ts uses of it.
declare module 'heic-decode' {
  interface Decoded {
    width: number
    height: number
    data: Uint8ClampedArray
  }
  interface Image {
    width: number
    height: number
    decode(): Promise<Decoded>
  }
  const decode: {
    (input: { buffer: Uint8Array }): Promise<Decoded>
    /** The file's top-level images, parsed but not decoded; `dispose` frees them. */
    all(input: { buffer: Uint8Array }): Promise<Image[] & { dispose(): void }>
  }
  export default decode
}
