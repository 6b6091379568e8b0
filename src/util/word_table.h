// Tables of an enumeration's words: one table serves both ways (a value to its word for output,
// a word to its value for parsing), so that a printer and a parser cannot drift apart, and a
// value's every spelling (its word in footprint, in MLflow, in LoadGen, in SQL) stands on one
// row.
#ifndef FOOTPRINT_UTIL_WORD_TABLE_H_
#define FOOTPRINT_UTIL_WORD_TABLE_H_

namespace footprint {

// The first row of `table` whose `field` equals `key`; nullptr when none does.
template <typename Table, typename Row, typename Field, typename Key>
constexpr const Row* FindRow(const Table& table, Field Row::*field, const Key& key) {
  for (const Row& row : table) {
    if (row.*field == key) return &row;
  }
  return nullptr;
}

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_WORD_TABLE_H_
