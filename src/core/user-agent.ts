/** Browsers by the User-Agent token that names them, the more specific first (Edge and Opera also say Chrome; Chrome also says Safari). */
const BROWSERS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
  [/\bOPR\/|\bOpera\b/, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
  [/\bChrom(?:e|ium)\/|\bCriOS\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
  [/^curl\//, 'curl']
]

const SYSTEMS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux']
]

/**
 * A short readable name for the browser a User-Agent describes ("Firefox on Linux"), as the
 * sessions page shows it: enough to recognise one's own devices, no version numbers to read.
 */
export function browserSummary (userAgent: string | null): string {
  if (userAgent === null || userAgent.trim() === '') return 'Unknown browser'
  const browser = BROWSERS.find(([pattern]) => pattern.test(userAgent))?.[1]
  const system = SYSTEMS.find(([pattern]) => pattern.test(userAgent))?.[1]
  if (browser === undefined) return system === undefined ? 'Unknown browser' : `A browser on ${system}`
  return system === undefined ? browser : `${browser} on ${system}`
}
