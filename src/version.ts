/**
 * The running version, read from package.json, its one source. A JSON import is bundled into the single binary, and
 * the Docker image copies package.json beside src/.
 */
import { version } from '../package.json'

export const VERSION: string = version
