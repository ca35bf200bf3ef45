// Which process of a job a CUDA program is (runtime/cuda/src/Launcher.h): the
// Slurm node list parser, each launcher's variables, and their precedence.
#include "Launcher.h"

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>

using namespace pipert::cuda;

namespace {

// An environment from a table (the process's own is not touched).
Environment table(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char *name) -> const char * {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

using Hosts = std::vector<std::string>;

} // namespace

TEST_CASE("launcher: Slurm node lists expand as scontrol show hostnames does", "[launcher]") {
  CHECK(expandNodeList("node01") == Hosts{"node01"});
  CHECK(expandNodeList("node[01-04,07]") == Hosts{"node01", "node02", "node03", "node04", "node07"});
  CHECK(expandNodeList("a[8-10],b") == Hosts{"a8", "a9", "a10", "b"});
  CHECK(expandNodeList("gpu[098-101]") == Hosts{"gpu098", "gpu099", "gpu100", "gpu101"});
  CHECK(expandNodeList("r[1-2]n[3-4]") == Hosts{"r1n3", "r1n4", "r2n3", "r2n4"});
  CHECK(expandNodeList("x-[1,3]-y,z[5]") == Hosts{"x-1-y", "x-3-y", "z5"});
  CHECK(firstHostOfNodeList("node[07,01-04]") == "node07"); // as written, not sorted
  CHECK(firstHostOfNodeList("c[0000-9999999999]") == "c0000"); // not expanded whole
  CHECK(expandNodeList("n[1-1000000]", 3) == Hosts{"n1", "n2", "n3"});
}

TEST_CASE("launcher: malformed node lists are errors naming the list", "[launcher]") {
  for (const char *bad : {"node[01-04", "node]1", "node[]", "node[4-1]", "node[1-]", "node[a]",
                          "a,,b", "", "node[1;2]"}) {
    INFO(bad);
    CHECK_THROWS_WITH(firstHostOfNodeList(bad),
                      Catch::StartsWith(std::string("cannot read the Slurm node list '") + bad));
  }
}

TEST_CASE("launcher: torchrun's variables", "[launcher]") {
  ProcessGroup g = resolveLaunch({}, table({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                            {"MASTER_ADDR", "head"}, {"MASTER_PORT", "1234"}}));
  CHECK(g.launcher == "torchrun");
  CHECK(g.rank == 3);
  CHECK(g.worldSize == 8);
  CHECK(g.localRank == 1);
  CHECK(g.masterAddr == "head");
  CHECK(g.masterPort == 1234);
  // LOCAL_RANK defaults to RANK; torchrun always sets MASTER_PORT, so no default port.
  g = resolveLaunch({}, table({{"RANK", "2"}, {"WORLD_SIZE", "4"}}));
  CHECK(g.localRank == 2);
  CHECK(g.masterPort == 0);
}

TEST_CASE("launcher: Slurm's variables, rank 0 on the step's first node", "[launcher]") {
  auto env = table({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"},
                    {"SLURM_JOB_NODELIST", "job[1-9]"}, {"SLURM_STEP_NODELIST", "gpu[03-06]"}});
  ProcessGroup g = resolveLaunch({}, env);
  CHECK(g.launcher == "Slurm");
  CHECK(g.rank == 5);
  CHECK(g.worldSize == 16);
  CHECK(g.localRank == 1);
  CHECK(g.masterAddr == "gpu03");
  CHECK(g.masterPort == kDefaultMasterPort);
  CHECK(launchedAsGroup({}, env));
  // Without the step's list, the job's; MASTER_ADDR and MASTER_PORT win.
  g = resolveLaunch({}, table({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                               {"SLURM_JOB_NODELIST", "job[1-9]"}}));
  CHECK(g.masterAddr == "job1");
  g = resolveLaunch({}, table({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                               {"SLURM_JOB_NODELIST", "job[1-9]"}, {"MASTER_ADDR", "login"},
                               {"MASTER_PORT", "40000"}}));
  CHECK(g.masterAddr == "login");
  CHECK(g.masterPort == 40000);
}

TEST_CASE("launcher: Open MPI's variables need an address from elsewhere", "[launcher]") {
  auto env = table({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  ProcessGroup g = resolveLaunch({}, env);
  CHECK(g.launcher == "Open MPI");
  CHECK(g.rank == 1);
  CHECK(g.worldSize == 2);
  CHECK(g.localRank == 0);
  CHECK(g.masterAddr.empty()); // the bootstrap then asks for MASTER_ADDR or --master-addr
  CHECK(g.masterPort == kDefaultMasterPort);
  LaunchFlags flags;
  flags.masterAddr = "node7";
  CHECK(resolveLaunch(flags, env).masterAddr == "node7");
}

TEST_CASE("launcher: precedence is flags, torchrun, Slurm, Open MPI", "[launcher]") {
  std::map<std::string, std::string> all = {
      {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
      {"SLURM_PROCID", "3"},         {"SLURM_NTASKS", "4"},
      {"SLURM_NODELIST", "n1"},      {"SLURM_STEP_NODELIST", "s[1-2]"},
      {"RANK", "5"},                 {"WORLD_SIZE", "6"},
      {"MASTER_ADDR", "m"},          {"MASTER_PORT", "7"}};
  ProcessGroup g = resolveLaunch({}, table(all));
  CHECK(g.launcher == "torchrun");
  CHECK((g.rank == 5 && g.worldSize == 6));
  all.erase("RANK");
  all.erase("WORLD_SIZE");
  g = resolveLaunch({}, table(all));
  CHECK(g.launcher == "Slurm");
  CHECK((g.rank == 3 && g.worldSize == 4 && g.localRank == 3));
  CHECK(g.masterAddr == "m"); // MASTER_ADDR wins over the node list
  all.erase("SLURM_PROCID");
  all.erase("SLURM_NTASKS");
  g = resolveLaunch({}, table(all));
  CHECK(g.launcher == "Open MPI");
  CHECK((g.rank == 1 && g.worldSize == 2));
  // Flags win over every launcher, field by field.
  LaunchFlags flags;
  flags.localRank = 0;
  flags.masterPort = 999;
  g = resolveLaunch(flags, table(all));
  CHECK((g.rank == 1 && g.localRank == 0 && g.masterPort == 999));
  flags.rank = 0;
  flags.worldSize = 1;
  g = resolveLaunch(flags, table({}));
  CHECK(g.launcher == "flags");
  CHECK((g.rank == 0 && g.worldSize == 1));
}

TEST_CASE("launcher: missing and malformed values name the variable", "[launcher]") {
  CHECK_THROWS_WITH(resolveLaunch({}, table({})), Catch::Contains("torchrun (RANK, WORLD_SIZE)"));
  CHECK_THROWS_WITH(resolveLaunch({}, table({{"RANK", "0"}})),
                    Catch::Contains("$WORLD_SIZE is not set"));
  CHECK_THROWS_WITH(resolveLaunch({}, table({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}})),
                    Catch::Contains("$SLURM_PROCID is 'x', not a non-negative integer"));
  CHECK_THROWS_WITH(resolveLaunch({}, table({{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
                    Catch::Contains("rank 4 (from torchrun) is not below the world size 4"));
  CHECK_THROWS_WITH(resolveLaunch({}, table({{"RANK", "0"}, {"WORLD_SIZE", "1"},
                                             {"MASTER_PORT", "70000"}})),
                    Catch::Contains("MASTER_PORT 70000 is not a TCP port"));
  CHECK_THROWS_WITH(resolveLaunch({}, table({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                             {"SLURM_JOB_NODELIST", "n[1"}})),
                    Catch::Contains("cannot read the Slurm node list 'n[1'"));
}

TEST_CASE("launcher: one process under a launcher keeps the in-process transport", "[launcher]") {
  CHECK_FALSE(launchedAsGroup({}, table({})));
  CHECK_FALSE(launchedAsGroup({}, table({{"SLURM_NTASKS", "1"}, {"SLURM_PROCID", "0"}})));
  CHECK_FALSE(launchedAsGroup({}, table({{"OMPI_COMM_WORLD_SIZE", "1"}})));
  CHECK(launchedAsGroup({}, table({{"WORLD_SIZE", "1"}}))); // torchrun asked for it
  CHECK(launchedAsGroup({}, table({{"OMPI_COMM_WORLD_SIZE", "2"}})));
  LaunchFlags flags;
  flags.worldSize = 2;
  CHECK(launchedAsGroup(flags, table({})));
}
