// taot-planner's settings: the strict --config reader, the limits, the token and listen policy.
#include "taot/server/daemon_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace taot::server {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A settings file in the test's temporary directory.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("taot_daemon_config_" + std::to_string(getpid()) + "_" + std::to_string(counter_++) + ".toml"))
                .string();
    std::ofstream(path_) << text;
  }
  ~ConfigFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

absl::Status Parse(std::initializer_list<std::string> args, DaemonSettings& s) {
  std::vector<const char*> argv = {"taot-planner"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseDaemonArgs(static_cast<int>(argv.size()), argv.data(), s);
}

absl::Status ParseFile(const std::string& text, DaemonSettings& s) {
  ConfigFile file(text);
  return Parse({"--config", file.path()}, s);
}

constexpr char kJob[] = "job-id = \"cfg\"\nworld-size = 8\nexperts = 32\n";

TEST(DaemonConfigTest, ReadsEveryKindOfValue) {
  DaemonSettings s;
  ASSERT_TRUE(ParseFile(std::string(kJob) +
                            "inter-node-cost = 2\nparam = [\"a=1\", \"b=2\"]\nplugin = \"x.so\"\npredictive = true\n"
                            "expert-bytes = 25165824\nlisten = \"127.0.0.1:7000\"\n",
                        s)
                  .ok());
  EXPECT_EQ(s.job.job_id, "cfg");
  EXPECT_EQ(s.job.world_size, 8);
  EXPECT_EQ(s.job.inter_node_cost, 2.0);
  EXPECT_THAT(s.params, ElementsAre("a=1", "b=2"));
  EXPECT_THAT(s.plugins, ElementsAre("x.so"));
  EXPECT_TRUE(s.job.predictive);
  EXPECT_EQ(s.job.expert_bytes, 25165824);
  EXPECT_EQ(s.listen, "127.0.0.1:7000");
  EXPECT_TRUE(ConfigureDaemon(s, std::nullopt).ok());
}

TEST(DaemonConfigTest, FlagsOnTheCommandLineWin) {
  ConfigFile file(std::string(kJob) + "planner = \"echo\"\nparam = [\"a=1\"]\n");
  DaemonSettings s;
  ASSERT_TRUE(Parse({"--config", file.path(), "--planner", "llep", "--param", "b=2"}, s).ok());
  EXPECT_EQ(s.job.planner, "llep");
  EXPECT_THAT(s.params, ElementsAre("b=2"));
  EXPECT_EQ(s.config_file, file.path());
}

TEST(DaemonConfigTest, AnUnknownKeyIsAnErrorNamingItsLine) {
  DaemonSettings s;
  const absl::Status status = ParseFile(std::string(kJob) + "planer = \"echo\"\n", s);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("--config"), HasSubstr("line 4"), HasSubstr("unknown key 'planer'")));
  // A table is no setting either, nor is the file naming another one.
  EXPECT_THAT(ParseFile(std::string(kJob) + "[job]\nid = 1\n", s).message(), HasSubstr("unknown key 'job'"));
  EXPECT_THAT(ParseFile(std::string(kJob) + "config = \"x\"\n", s).message(), HasSubstr("unknown key 'config'"));
}

TEST(DaemonConfigTest, ARepeatedKeyIsAnError) {
  DaemonSettings s;
  const absl::Status status = ParseFile(std::string(kJob) + "world-size = 16\n", s);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("line 4"));
}

TEST(DaemonConfigTest, ABrokenTailIsAnError) {
  DaemonSettings s;
  const absl::Status status = ParseFile(std::string(kJob) + "planner = \"taot\nslots = ", s);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("line 4"));
}

TEST(DaemonConfigTest, AWrongTypeNamesTheKey) {
  DaemonSettings s;
  EXPECT_THAT(ParseFile("job-id = \"cfg\"\nworld-size = \"8\"\nexperts = 32\n", s).message(),
              AllOf(HasSubstr("line 2"), HasSubstr("world-size: must be an integer")));
  EXPECT_THAT(ParseFile(std::string(kJob) + "slots = 2.5\n", s).message(), HasSubstr("slots: must be an integer"));
  EXPECT_THAT(ParseFile(std::string(kJob) + "predictive = \"yes\"\n", s).message(),
              HasSubstr("predictive: must be true or false"));
  EXPECT_THAT(ParseFile(std::string(kJob) + "param = [1]\n", s).message(),
              HasSubstr("param: must be a string or an array of strings"));
}

TEST(DaemonConfigTest, ErrorsQuoteOnlyAShortPrefix) {
  DaemonSettings s;
  const std::string key(10000, 'k');
  const absl::Status status = ParseFile(std::string(kJob) + key + " = 1\n", s);
  EXPECT_THAT(status.message(), HasSubstr("unknown key"));
  EXPECT_LT(status.message().size(), 400u);
}

TEST(DaemonConfigTest, AnOversizedFileIsRefused) {
  DaemonSettings s;
  const std::string comment = "# " + std::string(kMaxConfigBytes, 'x') + "\n";
  EXPECT_THAT(ParseFile(std::string(kJob) + comment, s).message(), HasSubstr("larger than"));
}

absl::Status Configure(std::initializer_list<std::string> args, std::optional<std::string_view> env = std::nullopt) {
  DaemonSettings s;
  std::vector<std::string> all = {"--job-id", "x"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<const char*> argv = {"taot-planner"};
  for (const std::string& a : all) argv.push_back(a.c_str());
  if (absl::Status p = ParseDaemonArgs(static_cast<int>(argv.size()), argv.data(), s); !p.ok()) return p;
  return ConfigureDaemon(s, env);
}

TEST(DaemonConfigTest, SizesPastThePlannersLimitsAreRefused) {
  EXPECT_THAT(Configure({"--world-size", "65536", "--experts", "65536"}).message(), HasSubstr("--world-size"));
  EXPECT_THAT(Configure({"--world-size", "4096", "--experts", "65536"}).message(),
              HasSubstr("--world-size x --experts"));
  EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--slots", "33"}).message(), HasSubstr("--slots"));
  EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--ranks-per-node", "9"}).message(),
              HasSubstr("--ranks-per-node"));
  EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--grace-s", "100000"}).message(),
              HasSubstr("--grace-s"));
  EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--inter-node-cost", "nan"}).message(),
              HasSubstr("--inter-node-cost"));
  for (const char* threads : {"0", "257"}) {
    EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--planning-threads", threads}).message(),
                HasSubstr("--planning-threads: must be in [1, 256]"));
  }
  EXPECT_TRUE(Configure({"--world-size", "8", "--experts", "32", "--planning-threads", "16"}).ok());
  EXPECT_TRUE(Configure({"--world-size", "4096", "--experts", "4096", "--ranks-per-node", "8"}).ok());
}

TEST(DaemonConfigTest, TheRoundsMemoryLimitIsCheckedAndReachesTheJob) {
  EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--max-rounds-mb", "0"}).message(),
              HasSubstr("--max-rounds-mb"));
  DaemonSettings s;
  const char* argv[] = {"taot-planner", "--job-id",        "j", "--world-size", "8", "--experts",
                        "32",           "--max-rounds-mb", "3"};
  ASSERT_TRUE(ParseDaemonArgs(9, argv, s).ok());
  ASSERT_TRUE(ConfigureDaemon(s, std::nullopt).ok());
  EXPECT_EQ(s.job.max_round_bytes, int64_t{3} << 20);
}

TEST(DaemonConfigTest, TheDeviceIsCpuOrOneCudaDevice) {
  for (const char* bad : {"gpu", "cuda", "cuda:", "cuda:-1", "cuda:1024", "cuda:0x1", "cuda: 1", "cuda:+1", "CPU"}) {
    EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--device", bad}).message(),
                AllOf(HasSubstr("--device: must be cpu or cuda:N with N in [0, 1023]"), HasSubstr(bad)))
        << bad;
  }
  DaemonSettings s;
  const char* argv[] = {"taot-planner", "--job-id", "j", "--world-size", "8", "--experts", "32", "--device", "cuda:3"};
  ASSERT_TRUE(ParseDaemonArgs(9, argv, s).ok());
  ASSERT_TRUE(ConfigureDaemon(s, std::nullopt).ok());
  EXPECT_EQ(s.cuda_device, 3);
  s.device = "cpu";
  ASSERT_TRUE(ConfigureDaemon(s, std::nullopt).ok());
  EXPECT_EQ(s.cuda_device, std::nullopt);
}

TEST(DaemonConfigTest, ASetButBlankTokenIsAnError) {
  for (const char* blank : {"", "  \n"}) {
    EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32"}, blank).message(), HasSubstr("$TAOT_JOB_TOKEN"));
  }
  EXPECT_TRUE(Configure({"--world-size", "8", "--experts", "32"}, "s3cret").ok());
}

TEST(DaemonConfigTest, BeyondLoopbackNeedsAuthenticationOrTheExplicitFlag) {
  const absl::Status open = Configure({"--world-size", "8", "--experts", "32", "--listen", "0.0.0.0:50051"});
  EXPECT_THAT(open.message(),
              AllOf(HasSubstr("--listen"), HasSubstr("0.0.0.0:50051"), HasSubstr("--allow-unauthenticated")));
  EXPECT_TRUE(Configure({"--world-size", "8", "--experts", "32", "--listen", "0.0.0.0:50051"}, "s3cret").ok());
  EXPECT_TRUE(
      Configure({"--world-size", "8", "--experts", "32", "--listen", "[::]:50051", "--allow-unauthenticated"}).ok());
  EXPECT_TRUE(Configure({"--world-size", "8", "--experts", "32", "--listen", "0.0.0.0:50051", "--tls-cert", "c.pem",
                         "--tls-key", "k.pem", "--tls-client-ca", "ca.pem"})
                  .ok());
  EXPECT_THAT(Configure({"--world-size", "8", "--experts", "32", "--listen", "127.0.0.1"}).message(),
              HasSubstr("--listen: must be host:port"));
}

TEST(DaemonConfigTest, LoopbackAddresses) {
  for (const char* local : {"127.0.0.1:1", "127.3.2.1:0", "[::1]:50051", "localhost:9", "unix:/tmp/s"}) {
    EXPECT_TRUE(IsLoopbackListen(local)) << local;
  }
  for (const char* open : {"0.0.0.0:1", "[::]:1", "10.0.0.1:1", "taot:1", ":50051", "128.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackListen(open)) << open;
  }
}

TEST(DaemonConfigTest, ReloadNamesEverySettingThatNeedsARestart) {
  DaemonSettings was, now;
  now.plugins = {"x.so"};
  now.job.world_size = 16;
  now.job.planner = "llep";  // applied live
  now.log_level = "debug";   // applied live
  now.device = "cuda:0";
  EXPECT_THAT(SettingsNeedingRestart(was, now), ElementsAre("world-size", "plugin", "device"));
  EXPECT_TRUE(SettingsNeedingRestart(was, was).empty());
}

TEST(DaemonConfigTest, ProbeSaysAddressInUse) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t size = sizeof(a);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size), 0);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  EXPECT_THAT(ProbeListen(address).message(), HasSubstr("address in use"));
  close(fd);
  EXPECT_TRUE(ProbeListen(address).ok());
}

}  // namespace
}  // namespace taot::server
