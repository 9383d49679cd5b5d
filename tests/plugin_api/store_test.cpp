// The state file: private to its owner (it holds pods' JSON), and versioned (PRAGMA user_version)
// with migrations: today's unversioned files are taken up, a newer schema is refused untouched.
#include <sys/stat.h>

#include <filesystem>

#include <sqlite3.h>

#include <doctest/doctest.h>

#include "plugin_api/store.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

/// The permission bits of `path`.
unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE_MESSAGE(::stat(path.c_str(), &st) == 0, path);
  return st.st_mode & 0777;
}

/// Runs `sql` on the file directly, as another program (or an older fracpack) would.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  CHECK_MESSAGE(rc == SQLITE_OK, (error ? error : ""));
  sqlite3_free(error);
  sqlite3_close(db);
}

/// `PRAGMA user_version` of the file, read directly.
int user_version(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  const int version = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return version;
}

/// Today's format before versions were kept: the two tables, user_version 0, one binding.
constexpr const char* kUnversioned = R"(
CREATE TABLE fracpack_objects(kind TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY(kind, name));
CREATE TABLE fracpack_bindings(pod TEXT PRIMARY KEY, uid TEXT NOT NULL, node TEXT NOT NULL, gpus TEXT NOT NULL,
                               body TEXT NOT NULL);
INSERT INTO fracpack_bindings VALUES('default/p', 'u1', 'a', '[0]', '{"kind":"Pod"}');
INSERT INTO fracpack_objects VALUES('Node', 'a', '{"kind":"Node","metadata":{"name":"a"}}');
)";

}  // namespace

TEST_CASE("a new state file and its -wal, -shm and lock files are readable by their owner only") {
  StateFile file;
  const mode_t old_mask = ::umask(022);  // the usual umask: SQLite alone would create 0644
  auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
  ::umask(old_mask);
  REQUIRE_MESSAGE(store.is_ok(), store.status().message());
  REQUIRE((*store)->put_binding({"default/p", "u1", "a", {0}, {{"kind", "Pod"}}}).is_ok());  // the WAL exists now
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) {
    CAPTURE(suffix);
    CHECK(mode_of(file.path + suffix) == 0600);
  }
}

TEST_CASE("a state file an older server left readable by others is made private") {
  StateFile file;
  raw_sql(file.path, kUnversioned);
  ::chmod(file.path.c_str(), 0644);
  auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
  REQUIRE_MESSAGE(store.is_ok(), store.status().message());
  CHECK(mode_of(file.path) == 0600);
}

TEST_CASE("a new state file gets the newest schema version") {
  StateFile file;
  auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
  REQUIRE(store.is_ok());
  CHECK(*(*store)->schema_version() == api::Store::kSchemaVersion);
  CHECK(api::Store::kSchemaVersion == 2);
  auto memory = api::Store::open(":memory:", api::Durability::kProcessCrash);
  REQUIRE(memory.is_ok());
  CHECK(*(*memory)->schema_version() == api::Store::kSchemaVersion);
}

TEST_CASE("a file of today's unversioned format (user_version 0) is migrated with its contents") {
  StateFile file;
  raw_sql(file.path, kUnversioned);
  {
    auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
    REQUIRE_MESSAGE(store.is_ok(), store.status().message());
    CHECK(*(*store)->schema_version() == 2);
    CHECK(user_version(file.path) == 2);  // on disk, not only in this connection
    auto bindings = (*store)->bindings();
    REQUIRE(bindings.is_ok());
    REQUIRE(bindings->size() == 1);
    CHECK(bindings->front().pod_key == "default/p");
    CHECK(bindings->front().gpus == std::vector<int>{0});
    CHECK_FALSE(bindings->front().started.has_value());  // recorded before starts were kept
    auto objects = (*store)->objects();
    REQUIRE(objects.is_ok());
    CHECK(objects->size() == 1);
  }
  auto again = api::Store::open(file.path, api::Durability::kProcessCrash);  // already at 2: nothing to do
  REQUIRE(again.is_ok());
  CHECK((*again)->bindings()->size() == 1);
}

TEST_CASE("a version-1 file gains the start column; a binding's start survives a reopen") {
  StateFile file;
  raw_sql(file.path, std::string(kUnversioned) + "PRAGMA user_version = 1;");
  {
    auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
    REQUIRE_MESSAGE(store.is_ok(), store.status().message());
    CHECK(user_version(file.path) == 2);
    api::StoredBinding b{"default/q", "u2", "a", {1}, {{"kind", "Pod"}}};
    b.started = 1'700'000'000;
    REQUIRE((*store)->put_binding(b).is_ok());
  }
  auto again = api::Store::open(file.path, api::Durability::kProcessCrash);
  REQUIRE(again.is_ok());
  auto bindings = (*again)->bindings();
  REQUIRE(bindings.is_ok());
  REQUIRE(bindings->size() == 2);
  CHECK_FALSE(bindings->at(0).started.has_value());
  CHECK(bindings->at(1).pod_key == "default/q");
  CHECK(bindings->at(1).started == 1'700'000'000);
}

TEST_CASE("a file with a newer schema than this build knows is refused, naming file and versions, and left as it was") {
  StateFile file;
  raw_sql(file.path, std::string(kUnversioned) + "PRAGMA user_version = 7;");
  auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
  REQUIRE(!store.is_ok());
  const std::string message = store.status().message();
  CHECK_MESSAGE(message.find(file.path) != std::string::npos, message);
  CHECK(message.find("schema version 7") != std::string::npos);
  CHECK(message.find("newest 2") != std::string::npos);
  auto reopened = api::Store::open(file.path, api::Durability::kProcessCrash);  // the lock was let go
  CHECK(reopened.status().message() == message);
  CHECK(user_version(file.path) == 7);  // not migrated, not written
}

TEST_CASE("an unversioned database that is not fracpack's is refused, not migrated") {
  StateFile file;
  raw_sql(file.path, "CREATE TABLE users(name TEXT);");
  auto store = api::Store::open(file.path, api::Durability::kProcessCrash);
  REQUIRE(!store.is_ok());
  CHECK_MESSAGE(store.status().message().find("not a fracpack state file") != std::string::npos, store.status().message());
  CHECK(store.status().message().find(file.path) != std::string::npos);
}

}  // namespace fracpack::test
