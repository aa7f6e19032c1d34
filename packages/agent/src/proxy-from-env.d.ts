// proxy-from-env ships no types of its own
declare module 'proxy-from-env' {
  /** The proxy URL for `url` by the *_PROXY and NO_PROXY environment variables, or '' for none. */
  export function getProxyForUrl(url: string | URL): string;
}
