#include "plugin_api/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include <sqlite3.h>

#include <fmt/format.h>

namespace fracpack::api {
namespace {

using nlohmann::json;

Status sqlite_error(sqlite3* db, std::string_view what) {
  return {Code::kInternal, fmt::format("state store: {}: {}", what, db ? sqlite3_errmsg(db) : "out of memory")};
}

/// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) { ok_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) == SQLITE_OK; }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  void bind(int i, const std::string& text) { sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT); }
  void bind(int i, std::optional<std::int64_t> value) {
    if (value) {
      sqlite3_bind_int64(stmt_, i, *value);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  int step() { return sqlite3_step(stmt_); }
  [[nodiscard]] std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  [[nodiscard]] std::optional<std::int64_t> optional_integer(int column) const {
    if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
    return integer(column);
  }
  [[nodiscard]] std::string text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
  }
  /// Steps to the end, then resets (a statement kept by the Store runs again).
  Status run(std::string_view what) {
    const bool done = ok_ && step() == SQLITE_DONE;
    Status st = done ? Status::ok() : sqlite_error(db_, what);
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return st;
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool ok_ = false;
};

/// The schema's history: kMigrations[v] takes a file at `PRAGMA user_version` v to v + 1, and the
/// newest version is their count. A new schema change is a new step at the end, never an edit of
/// one already released. Version 0 is an empty file, or one written before the version was kept
/// (these same two tables): step 0 creates only what is missing.
constexpr const char* kMigrations[] = {
    R"(CREATE TABLE IF NOT EXISTS fracpack_objects(kind TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
                                                PRIMARY KEY(kind, name));
       CREATE TABLE IF NOT EXISTS fracpack_bindings(pod TEXT PRIMARY KEY, uid TEXT NOT NULL, node TEXT NOT NULL,
                                                 gpus TEXT NOT NULL, body TEXT NOT NULL);)",
    // 1 → 2: when each bound pod started (seconds since the epoch), for min-runtime protection
    // across restarts; NULL for bindings recorded before.
    "ALTER TABLE fracpack_bindings ADD COLUMN started INTEGER;",
};
static_assert(std::size(kMigrations) == Store::kSchemaVersion);

/// The tables of a version-0 file that is fracpack's (any other table: someone else's database).
constexpr const char* kForeignTables =
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('fracpack_objects', 'fracpack_bindings')";

/// Two servers on one state file would each acknowledge binds of the same GPUs. An exclusive flock
/// on a sidecar file (SQLite's own locks are per transaction, not per process) keeps the second
/// one out; the kernel drops it when the process dies, even by kill -9. The locked descriptor.
Result<int> lock_state_file(const std::string& path) {
  const std::string lock_path = path + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    return Status(Code::kInternal, fmt::format("state store {}: cannot open {}: {}", path, lock_path, std::strerror(errno)));
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd);
    return Status(Code::kInternal, fmt::format("state store {}: in use by another fracpack serve (locked {}); one server per "
                                               "state file, or two would hand out the same GPUs", path, lock_path));
  }
  return lock_fd;
}

/// The state file holds pods' JSON: its owner's alone. Creates `path` 0600 when missing, and takes
/// group and other bits off it and its -wal, -shm and .lock files when an older server left them
/// readable (SQLite gives the -wal and -shm files it creates the database file's mode).
Status make_private(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status(Code::kInternal, fmt::format("state store {}: cannot open it: {}", path, std::strerror(errno)));
  ::close(fd);
  for (const std::string& file : {path, path + "-wal", path + "-shm", path + ".lock"}) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) (void)::chmod(file.c_str(), st.st_mode & 0700);
  }
  return Status::ok();
}

Status insert_binding(Statement& s, const StoredBinding& b) {
  s.bind(1, b.pod_key);
  s.bind(2, b.uid);
  s.bind(3, b.node);
  s.bind(4, json(b.gpus).dump());
  s.bind(5, b.pod.dump());
  s.bind(6, b.started);
  return s.run("recording a binding");
}

}  // namespace

/// The statements every bind and release runs, prepared once (parsing the SQL each time was a
/// tenth of a bind).
struct Store::Prepared {
  Statement insert_binding;
  Statement remove_binding;
  explicit Prepared(sqlite3* db)
      : insert_binding(db, "INSERT OR REPLACE INTO fracpack_bindings(pod, uid, node, gpus, body, started) VALUES(?,?,?,?,?,?)"),
        remove_binding(db, "DELETE FROM fracpack_bindings WHERE pod = ?") {}
};

Store::Prepared& Store::prepared() {
  if (!prepared_) prepared_ = std::make_unique<Prepared>(db_);  // after the schema exists
  return *prepared_;
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path, Durability durability) {
  int lock_fd = -1;
  if (path != ":memory:") {
    auto locked = lock_state_file(path);
    if (!locked) return locked.status();
    lock_fd = *locked;
    if (Status st = make_private(path); !st.is_ok()) {
      ::close(lock_fd);
      return st;
    }
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    Status st = sqlite_error(db, fmt::format("opening {}", path));
    sqlite3_close(db);
    if (lock_fd >= 0) ::close(lock_fd);
    return st;
  }
  std::unique_ptr<Store> store(new Store(db));
  store->lock_fd_ = lock_fd;
  sqlite3_busy_timeout(db, 5000);
  if (Status st = store->set_up(path, durability); !st.is_ok()) return st;
  return store;
}

Status Store::set_up(const std::string& path, Durability durability) {
  auto named = [&](const Status& st) { return Status(st.code(), fmt::format("{} ({})", st.message(), path)); };
  auto version = schema_version();
  if (!version) return named(version.status());
  if (*version > kSchemaVersion) {  // before anything writes to it
    return Status(Code::kInternal, fmt::format("state store {}: schema version {} is newer than this fracpack knows (newest {}); "
                                               "a newer fracpack wrote it: run that one, or give another --state",
                                               path, *version, kSchemaVersion));
  }
  if (path != ":memory:") {
    if (auto st = exec("PRAGMA journal_mode=WAL;"); !st.is_ok()) return named(st);
  }
  if (auto st = exec(durability == Durability::kPowerLoss ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=NORMAL;");
      !st.is_ok()) {
    return named(st);
  }
  if (auto st = migrate(*version); !st.is_ok()) return named(st);
  return Status::ok();
}

Result<int> Store::schema_version() const {
  Statement s(db_, "PRAGMA user_version");
  if (!s.ok() || s.step() != SQLITE_ROW) return sqlite_error(db_, "reading the schema version");
  return static_cast<int>(s.integer(0));
}

Status Store::migrate(int from) {
  if (from == kSchemaVersion) return Status::ok();
  if (from == 0) {
    Statement foreign(db_, kForeignTables);
    if (!foreign.ok()) return sqlite_error(db_, "reading the tables");
    if (foreign.step() == SQLITE_ROW) {
      return Status(Code::kInternal, fmt::format("state store: not a fracpack state file (it has a table {})", foreign.text(0)));
    }
  }
  if (auto st = exec("BEGIN IMMEDIATE;"); !st.is_ok()) return st;
  Status st = Status::ok();
  for (int v = from; v < kSchemaVersion && st.is_ok(); ++v) st = exec(kMigrations[v]);
  if (st.is_ok()) st = exec(fmt::format("PRAGMA user_version = {};", kSchemaVersion).c_str());
  if (st.is_ok()) st = exec("COMMIT;");
  if (!st.is_ok()) (void)exec("ROLLBACK;");
  return st;
}

Store::Store(sqlite3* db) : db_(db) {}

Store::~Store() {
  prepared_.reset();  // finalized before the connection closes
  sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Store::exec(const char* sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    Status st(Code::kInternal, fmt::format("state store: {}", error ? error : "unknown error"));
    sqlite3_free(error);
    return st;
  }
  return Status::ok();
}

Status Store::commit(const StoreChange& change) {
  if (auto st = exec("BEGIN IMMEDIATE;"); !st.is_ok()) return st;
  Status st = Status::ok();
  for (const auto& o : change.objects) {
    if (o.body != nullptr) {
      Statement s(db_, "INSERT OR REPLACE INTO fracpack_objects(kind, name, body) VALUES(?,?,?)");
      s.bind(1, o.kind);
      s.bind(2, o.name);
      s.bind(3, o.body->dump());
      st = s.run("recording an object");
    } else {
      Statement s(db_, "DELETE FROM fracpack_objects WHERE kind = ? AND name = ?");
      s.bind(1, o.kind);
      s.bind(2, o.name);
      st = s.run("removing an object");
    }
    if (!st.is_ok()) break;
  }
  if (st.is_ok() && change.bindings) {
    st = exec("DELETE FROM fracpack_bindings;");
    for (const auto& b : *change.bindings) {
      if (!st.is_ok()) break;
      st = insert_binding(prepared().insert_binding, b);
    }
  }
  if (st.is_ok()) st = exec("COMMIT;");
  if (!st.is_ok()) (void)exec("ROLLBACK;");  // a failed COMMIT (disk full, I/O error) leaves the transaction open
  return st;
}

Result<std::vector<json>> Store::objects() const {
  Statement s(db_, "SELECT body FROM fracpack_objects ORDER BY kind, name");
  if (!s.ok()) return sqlite_error(db_, "reading objects");
  std::vector<json> out;
  int rc = 0;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(json::parse(s.text(0), nullptr, false));
  if (rc != SQLITE_DONE) return sqlite_error(db_, "reading objects");
  return out;
}

Status Store::put_binding(const StoredBinding& binding) { return insert_binding(prepared().insert_binding, binding); }

Status Store::remove_binding(const std::string& pod_key) {
  Statement& s = prepared().remove_binding;
  s.bind(1, pod_key);
  return s.run("removing a binding");
}

Result<std::vector<StoredBinding>> Store::bindings() const {
  Statement s(db_, "SELECT pod, uid, node, gpus, body, started FROM fracpack_bindings ORDER BY rowid");
  if (!s.ok()) return sqlite_error(db_, "reading bindings");
  std::vector<StoredBinding> out;
  int rc = 0;
  while ((rc = s.step()) == SQLITE_ROW) {
    StoredBinding b;
    b.pod_key = s.text(0);
    b.uid = s.text(1);
    b.node = s.text(2);
    json gpus = json::parse(s.text(3), nullptr, false);
    if (gpus.is_array()) {
      for (const auto& g : gpus) {
        if (g.is_number_integer()) b.gpus.push_back(g.get<int>());
      }
    }
    b.pod = json::parse(s.text(4), nullptr, false);
    b.started = s.optional_integer(5);
    out.push_back(std::move(b));
  }
  if (rc != SQLITE_DONE) return sqlite_error(db_, "reading bindings");
  return out;
}

}  // namespace fracpack::api
