// The serve record and lock: an atomic pid file that is removed only by its
// own server, and a lock that reads as held while any holder (or a process
// that inherited it) lives.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lemon/cli/runtime_files.h"
#include "support/temp_dir.h"

namespace lemon::cli {
namespace {

using testing::TempDir;

TEST(CliRuntimeFiles, RecordRoundTripsAndIsRemovedOnlyByItsOwner) {
  TempDir t{"lemon-cli"};
  RuntimePaths paths{t.path().string()};
  EXPECT_FALSE(read_server_record(paths.pid_file()));
  ASSERT_TRUE(write_server_record(paths.pid_file(), {1234, 8000}).ok());
  auto r = read_server_record(paths.pid_file());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pid, 1234);
  EXPECT_EQ(r->port, 8000);
  remove_server_record(paths.pid_file(), 999);
  EXPECT_TRUE(read_server_record(paths.pid_file())) << "another pid's record stays";
  remove_server_record(paths.pid_file(), 1234);
  EXPECT_FALSE(read_server_record(paths.pid_file()));
}

TEST(CliRuntimeFiles, MalformedRecordReadsAsNone) {
  TempDir t{"lemon-cli"};
  t.write("lemonade-router.pid", "garbage\n");
  EXPECT_FALSE(read_server_record((t.path() / "lemonade-router.pid").string()));
  t.write("lemonade-router.pid", "12\n70000\n");
  EXPECT_FALSE(read_server_record((t.path() / "lemonade-router.pid").string()));
}

TEST(CliRuntimeFiles, LockIsExclusiveAndHeldByAnInheritingChild) {
  TempDir t{"lemon-cli"};
  RuntimePaths paths{t.path().string()};
  EXPECT_FALSE(serve_lock_held(paths.lock_file()));
  int to_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t child = -1;
  {
    auto lock = ServeLock::try_acquire(paths.lock_file(), nullptr);
    ASSERT_TRUE(lock);
    EXPECT_TRUE(serve_lock_held(paths.lock_file()));
    EXPECT_FALSE(ServeLock::try_acquire(paths.lock_file(), nullptr)) << "one holder only";
    child = ::fork();
    if (child == 0) {
      char c;
      ::close(to_child[1]);
      [[maybe_unused]] auto n = ::read(to_child[0], &c, 1);  // holds the lock until told
      ::_exit(0);
    }
    ::close(to_child[0]);
  }
  EXPECT_TRUE(serve_lock_held(paths.lock_file())) << "the child inherited it";
  ::close(to_child[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(serve_lock_held(paths.lock_file()));
  EXPECT_TRUE(ServeLock::try_acquire(paths.lock_file(), nullptr));
}

}  // namespace
}  // namespace lemon::cli
