// mime-db ships no types: the part of its table compression reads.
declare module 'mime-db' {
  const types: Record<string, { compressible?: boolean } | undefined>;
  export default types;
}
