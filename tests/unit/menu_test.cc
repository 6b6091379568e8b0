#include "tui/menu.h"

#include <gtest/gtest.h>

namespace footprint::tui {
namespace {

using K = Key;

std::vector<Key> Decode(std::string_view bytes, bool final = true, size_t* used = nullptr) {
  size_t consumed = 0;
  auto keys = DecodeKeys(bytes, final, &consumed);
  if (used) *used = consumed;
  return keys;
}

TEST(DecodeKeysTest, ArrowsAndEditingKeysInBothEncodings) {
  EXPECT_EQ(Decode("\x1b[A\x1b[B\x1bOA\x1bOB"),
            (std::vector<Key>{K::kUp, K::kDown, K::kUp, K::kDown}));
  EXPECT_EQ(Decode("\x1b[5~\x1b[6~"), (std::vector<Key>{K::kPageUp, K::kPageDown}));
  EXPECT_EQ(Decode("\x1b[H\x1b[F\x1b[1~\x1b[4~\x1bOH"),
            (std::vector<Key>{K::kHome, K::kEnd, K::kHome, K::kEnd, K::kHome}));
  EXPECT_EQ(Decode("kj a\r\n"),
            (std::vector<Key>{K::kUp, K::kDown, K::kToggle, K::kToggleAll, K::kEnter, K::kEnter}));
  EXPECT_EQ(Decode("q"), std::vector<Key>{K::kCancel});
  EXPECT_EQ(Decode("\x03"), std::vector<Key>{K::kCancel});
}

TEST(DecodeKeysTest, UnknownBytesAndSequencesAreSkipped) {
  EXPECT_EQ(Decode("xyz\x1b[1;5C\x1b[2~ "), std::vector<Key>{K::kToggle});
}

TEST(DecodeKeysTest, EscapeAloneIsEscOnlyWhenNothingFollows) {
  size_t used = 99;
  EXPECT_TRUE(Decode(" \x1b", false, &used) == std::vector<Key>{K::kToggle});
  EXPECT_EQ(used, 1u) << "the Esc waits: it may open a sequence";
  EXPECT_TRUE(Decode("\x1b[", false, &used).empty());
  EXPECT_EQ(used, 0u);
  EXPECT_EQ(Decode("\x1b", true, &used), std::vector<Key>{K::kCancel});
  EXPECT_EQ(used, 1u);
  EXPECT_EQ(Decode("\x1bx"), std::vector<Key>{K::kCancel}) << "Esc then an unbound key";
  EXPECT_TRUE(Decode("\x1b[1;", true, &used).empty());
  EXPECT_EQ(used, 4u);
}

std::vector<std::string> Items(size_t n) {
  std::vector<std::string> items;
  for (size_t i = 0; i < n; ++i) items.push_back("item " + std::to_string(i));
  return items;
}

TEST(MenuTest, MovesWithinTheListAndTicks) {
  Menu m("Pick", Items(5));
  EXPECT_EQ(m.Handle(K::kUp), Menu::Outcome::kContinue);
  EXPECT_EQ(m.cursor(), 0u);
  m.Handle(K::kDown);
  m.Handle(K::kDown);
  m.Handle(K::kToggle);
  m.Handle(K::kEnd);
  EXPECT_EQ(m.cursor(), 4u);
  m.Handle(K::kDown);
  EXPECT_EQ(m.cursor(), 4u);
  m.Handle(K::kToggle);
  m.Handle(K::kHome);
  EXPECT_EQ(m.cursor(), 0u);
  EXPECT_EQ(m.Chosen(), (std::vector<size_t>{2, 4}));
  m.Handle(K::kDown);
  m.Handle(K::kDown);
  m.Handle(K::kToggle);  // untick
  EXPECT_EQ(m.Chosen(), (std::vector<size_t>{4}));
  EXPECT_EQ(m.Handle(K::kEnter), Menu::Outcome::kConfirmed);
}

TEST(MenuTest, NothingTickedChoosesTheHighlightedItem) {
  Menu m("Pick", Items(3));
  m.Handle(K::kDown);
  EXPECT_EQ(m.Chosen(), std::vector<size_t>{1});
}

TEST(MenuTest, ToggleAllTicksAllThenNone) {
  Menu m("Pick", Items(4), {1});
  m.Handle(K::kToggleAll);
  EXPECT_EQ(m.Chosen(), (std::vector<size_t>{0, 1, 2, 3}));
  m.Handle(K::kToggleAll);
  EXPECT_EQ(m.Chosen(), std::vector<size_t>{0}) << "none ticked: the highlighted one";
}

TEST(MenuTest, CancelAndEmptyMenus) {
  Menu m("Pick", Items(2));
  EXPECT_EQ(m.Handle(K::kCancel), Menu::Outcome::kCancelled);
  Menu empty("Pick", {});
  EXPECT_EQ(empty.Handle(K::kToggle), Menu::Outcome::kContinue);
  EXPECT_EQ(empty.Handle(K::kEnter), Menu::Outcome::kCancelled);
  EXPECT_TRUE(empty.Chosen().empty());
}

TEST(MenuTest, RendersAWindowThatFollowsTheCursor) {
  Menu m("Pick", Items(10), {0});
  m.SetHeight(3);
  std::vector<std::string> lines = m.Render(80);
  ASSERT_EQ(lines.size(), 5u);  // title, 3 items, help
  EXPECT_EQ(lines[0], "Pick  (1 of 10 selected)");
  EXPECT_EQ(lines[1], "> [x] item 0");
  EXPECT_EQ(lines[2], "  [ ] item 1");
  EXPECT_NE(lines[4].find("[1-3 of 10]"), std::string::npos);
  for (int i = 0; i < 5; ++i) m.Handle(K::kDown);
  lines = m.Render(80);
  EXPECT_EQ(lines[1], "  [ ] item 3");
  EXPECT_EQ(lines[3], "> [ ] item 5");
  EXPECT_NE(lines[4].find("[4-6 of 10]"), std::string::npos);
  m.Handle(K::kPageUp);
  EXPECT_EQ(m.cursor(), 2u);
  EXPECT_EQ(m.Render(80)[1], "> [ ] item 2");
}

TEST(MenuTest, LinesAreCutToTheWidthInCharacters) {
  Menu m("Runs · newest first", {"träin · 3f2a9c1e  2026-11-22"});
  std::vector<std::string> lines = m.Render(12);
  EXPECT_EQ(lines[0], "Runs · newes");
  EXPECT_EQ(lines[1], "> [ ] träin ");
}

TEST(MenuTest, ControlCharactersInNamesCannotDriveTheTerminal) {
  Menu m("Runs", {"evil\x1b[2J\nname\x7f"});
  EXPECT_EQ(m.Render(80)[1], "> [ ] evil?[2J?name?");
}

}  // namespace
}  // namespace footprint::tui
