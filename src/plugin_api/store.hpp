// The durable ledger: an embedded SQLite database (--state PATH; ":memory:" for tests).
//
// WAL mode, one transaction per bind and per release, committed before the caller acknowledges,
// so a crash of the process at any moment loses no acknowledged bind. `synchronous=NORMAL` (the
// default here) survives process crashes; `synchronous=FULL` (durability kFull) also survives
// power loss, at the cost of an fsync per bind. Internal to src/plugin_api/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"

struct sqlite3;

namespace fracpack::api {

/// A recorded binding: the pod as it was bound, and where.
struct StoredBinding {
  std::string pod_key;   ///< "namespace/name"
  std::string uid;
  std::string node;
  std::vector<int> gpus;
  nlohmann::json pod;    ///< the Pod object as received (decoded again on restart)
  std::optional<std::int64_t> started{};  ///< when it started, seconds since the epoch (min-runtime protection)
};

enum class Durability { kProcessCrash, kPowerLoss };

/// One accepted change to the state file, written in one SQLite transaction: all of it is on disk
/// after commit() returns OK, none of it after an error or a crash at any moment (kill -9 included).
struct StoreChange {
  struct Object {
    std::string kind;  ///< Node, Queue, PodGroup, PriorityClass
    std::string name;
    const nlohmann::json* body = nullptr;  ///< nullptr: remove the object
  };
  std::vector<Object> objects;
  /// Every binding replaced by these (Sync, a removed node), when set.
  std::optional<std::vector<StoredBinding>> bindings;
};

class Store {
 public:
  /// The newest schema this build knows (`PRAGMA user_version` of the files it writes).
  static constexpr int kSchemaVersion = 2;

  /// Opens (creating when needed, mode 0600: it holds pods' JSON) the database at `path`, and
  /// migrates an older schema to kSchemaVersion in one transaction (version 0: a file written
  /// before the version was kept). kInternal with SQLite's message when it cannot be opened or is
  /// not a fracpack state file, and naming the file and both versions when its schema is newer
  /// than kSchemaVersion (then the file is left as it was).
  static Result<std::unique_ptr<Store>> open(const std::string& path, Durability durability);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Writes `change` in one transaction (see StoreChange). kInternal with SQLite's message when it
  /// cannot; the file is then as it was.
  Status commit(const StoreChange& change);
  /// Cluster objects (Node, Queue, PodGroup, PriorityClass), by kind and name.
  [[nodiscard]] Result<std::vector<nlohmann::json>> objects() const;

  /// One binding recorded or removed: one (implicit) transaction each.
  Status put_binding(const StoredBinding& binding);
  Status remove_binding(const std::string& pod_key);
  [[nodiscard]] Result<std::vector<StoredBinding>> bindings() const;
  /// The file's `PRAGMA user_version`: kSchemaVersion once open() returned it.
  [[nodiscard]] Result<int> schema_version() const;

 private:
  explicit Store(sqlite3* db);
  int lock_fd_ = -1;  ///< flock()ed "<path>.lock": one server per state file
  Status exec(const char* sql) const;
  /// After opening: refuses a newer schema, sets the journal and durability, migrates.
  Status set_up(const std::string& path, Durability durability);
  /// Runs kMigrations from version `from` to kSchemaVersion, all or nothing.
  Status migrate(int from);
  struct Prepared;
  Prepared& prepared();
  sqlite3* db_;
  std::unique_ptr<Prepared> prepared_;
};

}  // namespace fracpack::api
