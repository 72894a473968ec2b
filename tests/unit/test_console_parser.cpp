// QEMU serial console parsing, on real boots of Debian's 6.1 and 6.12 kernels.

#include "autodriver/gate/console_parser.hpp"
#include "autodriver/gate/initramfs.hpp"
#include "autodriver/gate/qemu.hpp"
#include "fixtures.hpp"

using namespace autodriver::gate;

namespace {
int count(const ConsoleReport& r, FindingKind k) {
  int n = 0;
  for (const auto& f : r.findings) n += f.kind == k;
  return n;
}
} // namespace

TEST(ConsoleParser, OopsInProbeWithMarkers61) {
  auto r = parse_console(fixture("console/6.1-edu-oops-markers.txt"));
  EXPECT_TRUE(r.reached_init);
  EXPECT_FALSE(r.finished);
  EXPECT_TRUE(r.insmods.empty()) << "the panic happened inside insmod";
  ASSERT_EQ(count(r, FindingKind::oops), 1);
  ASSERT_EQ(count(r, FindingKind::panic), 1);
  const auto& oops = r.findings[0];
  EXPECT_EQ(oops.kind, FindingKind::oops);
  EXPECT_EQ(oops.module, "edu_oops");
  EXPECT_NE(oops.location.find("edu_probe"), std::string::npos);
  EXPECT_NE(oops.excerpt.find("Call Trace:"), std::string::npos);
  EXPECT_NE(oops.excerpt.find("Oops:"), std::string::npos) << "the Oops: line belongs to the same report";
}

TEST(ConsoleParser, OopsInProbeWithMarkers612) {
  auto r = parse_console(fixture("console/6.12-edu-oops-markers.txt"));
  ASSERT_GE(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].kind, FindingKind::oops);
  EXPECT_EQ(r.findings[0].module, "edu_oops");
  EXPECT_EQ(count(r, FindingKind::panic), 1);
}

TEST(ConsoleParser, CleanLoadBindsAndUnloads) {
  auto r = parse_console(fixture("console/6.12-edu-ok-markers.txt"));
  EXPECT_TRUE(r.reached_init);
  EXPECT_TRUE(r.finished);
  ASSERT_EQ(r.insmods.size(), 1u);
  EXPECT_EQ(r.insmods[0], (std::pair<std::string, int>{"edu_ok", 0}));
  ASSERT_EQ(r.rmmods.size(), 1u);
  EXPECT_EQ(r.rmmods[0].second, 0);
  EXPECT_EQ(r.preloads.size(), 2u);
  bool bound = false;
  for (const auto& b : r.pci_after)
    if (b.vendor == "0x1234" && b.device == "0x11e8" && b.driver == "edu_ok" && b.module == "edu_ok") bound = true;
  EXPECT_TRUE(bound);
  for (const auto& b : r.pci_before) EXPECT_NE(b.driver, "edu_ok");
  ASSERT_TRUE(r.tainted.has_value());
  EXPECT_EQ(*r.tainted, 12288);
  EXPECT_EQ(decode_taint(*r.tainted), "OE");
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].line;
}

TEST(ConsoleParser, WarningHasLocationAndModule) {
  auto r = parse_console(fixture("console/6.1-warn.txt"));
  ASSERT_EQ(count(r, FindingKind::warning), 1);
  for (const auto& f : r.findings) {
    if (f.kind != FindingKind::warning) continue;
    EXPECT_FALSE(f.location.empty());
    EXPECT_FALSE(f.module.empty());
    EXPECT_NE(f.excerpt.find("end trace"), std::string::npos);
  }
}

TEST(ConsoleParser, UnknownSymbolAndInvalidFormat) {
  auto u = parse_console(fixture("console/6.1-unknown-symbol.txt"));
  ASSERT_GE(count(u, FindingKind::unknown_symbol), 1);
  for (const auto& f : u.findings) {
    if (f.kind == FindingKind::unknown_symbol) {
      EXPECT_EQ(f.module, "8139cp");
    }
  }
  auto v = parse_console(fixture("console/6.12-invalid-module-format.txt"));
  EXPECT_GE(count(v, FindingKind::invalid_module_format), 1);
}

TEST(ConsoleParser, CleanBootHasNoFindings) {
  auto r = parse_console(fixture("console/6.1-8139cp-clean.txt"));
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].line;
}

TEST(ConsoleParser, DmesgDumpDoesNotDoubleCount) {
  std::string line = "[    1.234567] WARNING: CPU: 0 PID: 1 at drivers/x.c:10 f+0x1/0x2 [x]\n"
                     "[    1.234568] ---[ end trace 0000000000000000 ]---\n";
  auto r = parse_console("@@AD init\n" + line + "@@AD dmesg-begin\n" + line + "@@AD dmesg-end\n@@AD done\n");
  EXPECT_EQ(count(r, FindingKind::warning), 1);
  EXPECT_TRUE(r.finished);
}

TEST(ConsoleParser, ReportsBeforeTheDriverLoadsAreTheMachines) {
  // A starved TCG guest on a loaded 2-core host (captured from a bench run of vpoll on 6.12).
  std::string log =
      "[   95.754252] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\r\n"
      "[   97.143672] rcu: rcu_preempt kthread starved for 23237 jiffies! g-871 f0x2 RCU_GP_WAIT_FQS(5) ->state=0x0 "
      "->cpu=0\r\n"
      "@@AD init\r\n@@AD insmod-begin vpoll\r\n@@AD insmod vpoll rc=0\r\n"
      "[  120.000000] WARNING: CPU: 0 PID: 80 at drivers/misc/vpoll.c:42 vpoll_init+0x10/0x20 [vpoll]\r\n"
      "[  120.000001] ---[ end trace 0000000000000000 ]---\r\n@@AD done\r\n";
  auto rep = parse_console(log);
  ASSERT_GE(rep.findings.size(), 2u);
  EXPECT_TRUE(rep.findings.front().before_driver);
  EXPECT_FALSE(rep.findings.back().before_driver);
  EXPECT_EQ(rep.findings.back().module, "vpoll");
}

TEST(Initramfs, AReproducerRunsAfterLoadingAndBeforeUnloading) {
  InitramfsSpec spec;
  spec.modules.push_back({"drv", "/x/drv.ko"});
  EXPECT_EQ(init_script(spec).find("ad-repro"), std::string::npos);
  spec.repro = "#!/bin/sh\ncat /dev/drv\n";
  const std::string script = init_script(spec);
  const auto load = script.find("insmod /lib/ad/drv.ko"), run = script.find("timeout 30 /bin/sh /bin/ad-repro"),
             unload = script.find("rmmod drv");
  ASSERT_NE(run, std::string::npos);
  EXPECT_LT(load, run);
  EXPECT_LT(run, unload);
  spec.repro_executable = true;
  EXPECT_NE(init_script(spec).find("timeout 30 /bin/ad-repro"), std::string::npos);
  // Its exit status is read back from the console.
  auto rep = parse_console("@@AD init\n@@AD repro-begin\nread 6\n@@AD repro rc=3\n@@AD done\n");
  ASSERT_TRUE(rep.repro_rc.has_value());
  EXPECT_EQ(*rep.repro_rc, 3);
  EXPECT_FALSE(parse_console("@@AD init\n@@AD done\n").repro_rc.has_value());
}

// A sound card given with --device boots against a null audio backend: without one QEMU opens the
// host's audio and, sandboxed and headless, the guest never starts.
TEST(QemuArgv, ADeviceComesWithANullAudioBackend) {
  BootRequest r;
  r.vmlinux = "/k/vmlinux";
  r.initrd = "/k/initrd";
  r.device = "AC97";
  auto a = qemu_argv(r, "tcg");
  auto dev = std::find(a.begin(), a.end(), "AC97");
  auto audio = std::find(a.begin(), a.end(), "-audiodev");
  ASSERT_NE(dev, a.end());
  ASSERT_NE(audio, a.end());
  EXPECT_LT(audio, dev);
  EXPECT_EQ(*(audio + 1), "none,id=ad-none");
  r.device.clear();
  auto bare = qemu_argv(r, "tcg");
  EXPECT_EQ(std::find(bare.begin(), bare.end(), "-audiodev"), bare.end());
}

// A driver bound on another bus than PCI (a virtio driver behind virtio-pci) is reported too.
TEST(ConsoleParser, BindingsOnOtherBuses) {
  auto r = parse_console("@@AD init\n@@AD pci-before\n@@AD insmod-begin virtio_rng\n@@AD insmod virtio_rng rc=0\n"
                         "@@AD pci-after\n@@AD pci 0000:00:03.0 vendor=0x1af4 device=0x1005 driver=virtio-pci module=\n"
                         "@@AD bound virtio/virtio0 driver=virtio_rng module=virtio_rng\n@@AD done\n");
  ASSERT_EQ(r.bound_after.size(), 1u);
  EXPECT_EQ(r.bound_after[0].slot, "virtio/virtio0");
  EXPECT_EQ(r.bound_after[0].module, "virtio_rng");
  ASSERT_EQ(r.pci_after.size(), 1u);
  EXPECT_EQ(r.pci_after[0].module, "");
}

TEST(ConsoleParser, LongLinesDoNotExhaustTheStack) {
  // A guest console is untrusted: one line of a megabyte, then a real oops headline.
  const std::string n(1 << 20, 'a');
  auto r = parse_console("[    1.0] " + n + "\nBUG: kernel NULL pointer dereference, address: " + n + "\n" + n + "\n");
  EXPECT_FALSE(r.findings.empty());
}
