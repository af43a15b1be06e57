// Lists kept in a Map, grown by appending: never by copying the list for each new item, which for
// 10,000 alike entries is 50 million copies.

/** Appends `value` to the list at `key`, starting the list when there is none. */
export function append<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
