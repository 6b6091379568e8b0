// Database locations: which are servers, and that a password never shows (docs/cluster.md).
#include <gtest/gtest.h>

#include "footprint/store.h"
#include "store/stores.h"
#include "util/strings.h"

namespace footprint {
namespace {

TEST(StoreLocation, ServersAreUris) {
  EXPECT_TRUE(IsServerLocation("postgresql://alice@db/fp"));
  EXPECT_TRUE(IsServerLocation("postgres:///fp?host=/run/postgresql"));
  EXPECT_FALSE(IsServerLocation("footprint.db"));
  EXPECT_FALSE(IsServerLocation("sqlite:///tmp/x.db"));
}

TEST(StoreLocation, PasswordsAreRemovedWhereverLibpqReadsThem) {
  EXPECT_EQ(RedactedLocation("postgresql://u:p@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactedLocation("postgresql://u@h/db?password=x&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(RedactedLocation("postgres://h:5432/db"), "postgres://h:5432/db");
  // libpq ends the user information at the last '@' before the path: '?' and '#' may be in it.
  EXPECT_EQ(RedactedLocation("postgresql://u:p#ss@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactedLocation("postgresql://u:p?ss@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactedLocation("postgresql://u:p@ss@h/db?x=a@b"), "postgresql://u@h/db?x=a@b");
  // Parameter names are percent-decoded by libpq; sslpassword is a password too.
  EXPECT_EQ(RedactedLocation("postgresql://h/db?pass%77ord=s3&sslpassword=k"),
            "postgresql://h/db?pass%77ord=***&sslpassword=***");
  EXPECT_EQ(RedactedLocation("footprint.db"), "footprint.db");
  // libpq quotes what it cannot parse in its messages.
  EXPECT_EQ(WithoutSecrets("invalid percent-encoded token: \"100%zzoff\"",
                           "postgresql://u:100%zzoff@h/db"),
            "invalid percent-encoded token: \"***\"");
}

TEST(PercentDecoded, HexPairsOnly) {
  EXPECT_EQ(PercentDecoded("pass%77ord"), "password");
  EXPECT_EQ(PercentDecoded("100%zz%4"), "100%zz%4");
  EXPECT_EQ(PercentDecoded("%41%62"), "Ab");
}

}  // namespace
}  // namespace footprint
