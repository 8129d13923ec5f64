/** Binary units, one decimal where it matters: 1258291 -> "1.2 MB". */
export function humanSize(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  const text = unit === 0 ? String(value) : value.toFixed(1).replace(/\.0$/, '')
  return `${text} ${units[unit]}`
}

/** A size in a message: human units for the reader, the exact count for scripts and limits (`58.6 KB (60000 bytes)`). */
export const sizeText = (bytes: number) => (bytes < 1024 ? `${bytes} bytes` : `${humanSize(bytes)} (${bytes} bytes)`)
