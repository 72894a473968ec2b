// struct-convert: a driver object whose struct type the target removed, converted as the
// kernel's own drivers converted theirs (a synthetic pair of kernel trees shaped like 7.x's
// acpi_driver -> platform_driver conversions).

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/gate/integrity.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/struct_convert.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace fs = std::filesystem;
using namespace autodriver;

namespace {

int line_of(const std::string& text, const std::string& needle) {
  auto pos = text.find(needle);
  return pos == std::string::npos ? -1
                                  : 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

core::Diagnostic diag(const std::string& text, const std::string& needle, const std::string& message) {
  core::Diagnostic d;
  d.file = "ec.c";
  d.line = line_of(text, needle);
  d.message = message;
  return d;
}

bool put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  return util::write_file(p, text).has_value();
}

// Two of the kernel's own drivers, before and after their conversion.
const char* k_old_a = R"(#include <linux/acpi.h>

static int alpha_resume(struct device *dev)
{
	struct acpi_device *adev = to_acpi_device(dev);

	return alpha_setup(adev);
}

static SIMPLE_DEV_PM_OPS(alpha_pm, NULL, alpha_resume);

static int alpha_add(struct acpi_device *adev)
{
	return alpha_setup(adev);
}

static void alpha_remove(struct acpi_device *adev)
{
	alpha_teardown(adev);
}

static struct acpi_driver alpha_driver = {
	.name = "alpha",
	.class = "alpha_class",
	.ids = alpha_ids,
	.ops = {
		.add = alpha_add,
		.remove = alpha_remove,
	},
	.drv.pm = &alpha_pm,
};
module_acpi_driver(alpha_driver);
)";

const char* k_new_a = R"(#include <linux/acpi.h>
#include <linux/platform_device.h>

static int alpha_resume(struct device *dev)
{
	return alpha_setup(ACPI_COMPANION(dev));
}

static SIMPLE_DEV_PM_OPS(alpha_pm, NULL, alpha_resume);

static int alpha_probe(struct platform_device *pdev)
{
	struct acpi_device *adev = ACPI_COMPANION(&pdev->dev);

	return alpha_setup(adev);
}

static void alpha_remove(struct platform_device *pdev)
{
	struct acpi_device *adev = ACPI_COMPANION(&pdev->dev);

	alpha_teardown(adev);
}

static struct platform_driver alpha_driver = {
	.probe = alpha_probe,
	.remove = alpha_remove,
	.driver = {
		.name = "alpha",
		.acpi_match_table = alpha_ids,
		.pm = &alpha_pm,
	},
};
module_platform_driver(alpha_driver);
)";

const char* k_old_b = R"(#include <linux/acpi.h>

static void beta_notify(struct acpi_device *device, u32 event)
{
	beta_event(device, event);
}

static int beta_add(struct acpi_device *device)
{
	return 0;
}

static void beta_remove(struct acpi_device *device)
{
}

static struct acpi_driver beta_driver = {
	.name = "beta",
	.ids = beta_ids,
	.ops = {
		.add = beta_add,
		.remove = beta_remove,
		.notify = beta_notify,
	},
};

static int __init beta_init(void)
{
	return acpi_bus_register_driver(&beta_driver);
}

static void __exit beta_exit(void)
{
	acpi_bus_unregister_driver(&beta_driver);
}
)";

const char* k_new_b = R"(#include <linux/acpi.h>
#include <linux/platform_device.h>

static void beta_notify(acpi_handle handle, u32 event, void *data)
{
	beta_event(data, event);
}

static int beta_probe(struct platform_device *pdev)
{
	struct acpi_device *device;
	int err;

	device = ACPI_COMPANION(&pdev->dev);
	err = acpi_dev_install_notify_handler(device, ACPI_DEVICE_NOTIFY, beta_notify, device);
	return err;
}

static void beta_remove(struct platform_device *pdev)
{
	acpi_dev_remove_notify_handler(ACPI_COMPANION(&pdev->dev), ACPI_DEVICE_NOTIFY, beta_notify);
}

static struct platform_driver beta_driver = {
	.probe = beta_probe,
	.remove = beta_remove,
	.driver = {
		.name = "beta",
		.acpi_match_table = beta_ids,
	},
};

static int __init beta_init(void)
{
	return platform_driver_register(&beta_driver);
}

static void __exit beta_exit(void)
{
	platform_driver_unregister(&beta_driver);
}
)";

// An out-of-tree driver: a remove callback whose type depends on the kernel version, a notify
// callback, a member in a version branch, and a pm table.
const char* k_driver = R"(#include <linux/module.h>
#include <linux/acpi.h>

static void ec_notify(struct acpi_device *acpi_dev, u32 event)
{
	ec_handle(acpi_dev, event);
}

static int ec_add(struct acpi_device *acpi_dev)
{
	void *p = devm_kzalloc(&acpi_dev->dev, 8, GFP_KERNEL);

	return ec_start(acpi_dev, p);
}

static int ec_resume(struct device *dev)
{
	return ec_wake(acpi_driver_data(to_acpi_device(dev)));
}

static SIMPLE_DEV_PM_OPS(ec_pm, NULL, ec_resume);

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6,2,0)
static void ec_remove(struct acpi_device *acpi_dev)
#else
static int ec_remove(struct acpi_device *acpi_dev)
#endif
{
	ec_stop(acpi_dev);
#if LINUX_VERSION_CODE < KERNEL_VERSION(6,2,0)
	return 0;
#endif
}

static struct acpi_driver ec_driver = {
	.name = "ec",
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 10, 0)
	.owner = THIS_MODULE,
#endif
	.class = "hotkey",
	.ids = ec_ids,
	.ops = {
		.add = ec_add,
		.remove = ec_remove,
		.notify = ec_notify,
	},
	.drv.pm = &ec_pm,
};
module_acpi_driver(ec_driver);
)";

} // namespace

TEST(StructConvert, MemberPathsFlattenNestedAndChainedDesignators) {
  auto toks = csrc::tokenize("static struct x v = {\n\t.a = 1,\n\t.ops = {\n\t\t.add = f,\n\t},\n\t.drv.pm = &p,\n};\n");
  auto units = csrc::find_units(toks);
  ASSERT_EQ(units.size(), 1u);
  auto paths = propose::member_paths(toks, units[0].body + 1);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0].path, ".a");
  EXPECT_EQ(paths[1].path, ".ops.add");
  EXPECT_EQ(paths[2].path, ".drv.pm");
  EXPECT_EQ(csrc::c_text(paths[2].value), "&p");
  EXPECT_EQ(csrc::c_text({"ACPI_COMPANION", "(", "&", "pdev", "->", "dev", ")"}), "ACPI_COMPANION(&pdev->dev)");
  EXPECT_EQ(csrc::c_text({"struct", "acpi_device", "*"}), "struct acpi_device *");
}

TEST(StructConvert, FunctionWithVersionedPrototypesIsOneUnit) {
  auto toks = csrc::tokenize(k_driver);
  auto units = csrc::find_units(toks);
  EXPECT_TRUE(std::any_of(units.begin(), units.end(),
                          [](const auto& u) { return u.kind == csrc::UnitKind::function && u.name == "ec_remove"; }));
}

TEST(StructConvert, ConvertsAsTheKernelsDriversDid) {
  auto tmp = util::TempDir::create(util::scratch_root(), "sconv-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path root = tmp->path();
  ASSERT_TRUE(put(root / "old/drivers/platform/alpha.c", k_old_a));
  ASSERT_TRUE(put(root / "new/drivers/platform/alpha.c", k_new_a));
  ASSERT_TRUE(put(root / "old/drivers/acpi/beta.c", k_old_b));
  ASSERT_TRUE(put(root / "new/drivers/acpi/beta.c", k_new_b));
  ASSERT_TRUE(put(root / "tree/ec.c", k_driver));
  // The target's declarations the devres group needs.
  ASSERT_TRUE(put(root / "new/include/linux/device.h",
                  "struct device {\n\tvoid *p;\n};\n"
                  "void *devres_open_group(struct device *dev, void *id, gfp_t gfp);\n"
                  "void devres_close_group(struct device *dev, void *id);\n"
                  "int devres_release_group(struct device *dev, void *id);\n"
                  "int devm_add_action_or_reset(struct device *dev, void (*action)(void *), void *data);\n"));
  ASSERT_TRUE(put(root / "new/include/acpi/acpi_bus.h", "struct acpi_device {\n\tstruct device dev;\n};\n"));
  ASSERT_TRUE(put(root / "new/include/linux/platform_device.h", "struct platform_device {\n\tstruct device dev;\n};\n"));
  core::Kernel to;
  to.build_dir = root / "new";
  propose::PortContext ctx;
  ctx.to = &to;
  ctx.old_src = root / "old";
  ctx.new_src = root / "new";
  ctx.tree = root / "tree";
  ctx.original_tree = root / "tree";
  ctx.scratch = root / "s";
  core::Diagnostic d;
  d.file = "ec.c";
  d.line = 35;
  d.message = "variable 'ec_driver' has initializer but incomplete type";
  auto edits = propose::make_struct_convert()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].support, 2);
  ASSERT_TRUE(propose::apply_edit(edits[0], ctx.tree, ctx.scratch));
  auto after = util::read_file(ctx.tree / "ec.c");
  ASSERT_TRUE(after.has_value());
  // The driver's callbacks are untouched; adapters with the new types call them.
  EXPECT_NE(after->find("static int ec_add(struct acpi_device *acpi_dev)\n{\n\tvoid *p = devm_kzalloc(&acpi_dev->dev"),
            std::string::npos)
      << *after;
  // The pm callback gets the platform device's struct device: it reaches the ACPI device as the
  // bridge does, not by container_of.
  EXPECT_NE(after->find("\treturn ec_wake(acpi_driver_data(ACPI_COMPANION(dev)));\n"), std::string::npos) << *after;
  // Device-managed resources taken on the ACPI device are released at unbind.
  EXPECT_NE(after->find("static void ec_driver_release_devres(void *data)\n{\n\tstruct platform_device *pdev = data;\n"
                        "\tstruct acpi_device *acpi_dev = ACPI_COMPANION(&pdev->dev);\n\n"
                        "\tdevres_release_group(&acpi_dev->dev, pdev);\n}\n"),
            std::string::npos)
      << *after;
  EXPECT_NE(
      after->find("static void ec_driver_notify(acpi_handle handle, u32 event, void *data)\n{\n\tec_notify(data, event);\n}"),
      std::string::npos)
      << *after;
  EXPECT_NE(after->find("static int ec_driver_probe(struct platform_device *pdev)\n{\n"
                        "\tstruct acpi_device *acpi_dev = ACPI_COMPANION(&pdev->dev);\n\tint ret;\n\n"
                        "\tif (!devres_open_group(&acpi_dev->dev, pdev, GFP_KERNEL))\n\t\treturn -ENOMEM;\n"
                        "\tret = devm_add_action_or_reset(&pdev->dev, ec_driver_release_devres,\n\t\t\t\t       pdev);\n"
                        "\tif (ret)\n\t\treturn ret;\n"
                        "\tret = ec_add(acpi_dev);\n\tdevres_close_group(&acpi_dev->dev, pdev);\n\tif (ret)\n\t\treturn ret;\n"
                        "\tret = acpi_dev_install_notify_handler(acpi_dev, ACPI_DEVICE_NOTIFY,\n"),
            std::string::npos)
      << *after;
  EXPECT_NE(after->find("\tif (ret)\n\t\tec_remove(acpi_dev);\n\treturn ret;\n}"), std::string::npos) << *after;
  EXPECT_NE(after->find("static void ec_driver_remove(struct platform_device *pdev)\n{\n"
                        "\tstruct acpi_device *acpi_dev = ACPI_COMPANION(&pdev->dev);\n\n"
                        "\tacpi_dev_remove_notify_handler(acpi_dev, ACPI_DEVICE_NOTIFY,\n\t\t\t\t       ec_driver_notify);\n"
                        "\tec_remove(acpi_dev);\n}"),
            std::string::npos)
      << *after;
  // Members mapped by value, the version-dead .owner and .class dropped, .drv.pm followed.
  EXPECT_NE(after->find("static struct platform_driver ec_driver = {\n\t.driver = {\n\t\t.name = \"ec\",\n"
                        "\t\t.acpi_match_table = ec_ids,\n\t\t.pm = &ec_pm,\n\t},\n"
                        "\t.probe = ec_driver_probe,\n\t.remove = ec_driver_remove,\n};\n"
                        "module_platform_driver(ec_driver);\n"),
            std::string::npos)
      << *after;
  EXPECT_EQ(after->find("struct acpi_driver"), std::string::npos) << *after;
  EXPECT_EQ(after->find("module_acpi_driver"), std::string::npos) << *after;
  EXPECT_NE(after->find("#include <linux/acpi.h>\n#include <linux/platform_device.h>\n"), std::string::npos) << *after;

  // The integrity gate lets the conversion through: every callback is still called (from the
  // adapters the new table holds), only the pm callback a diagnosed line's table holds changed.
  ASSERT_TRUE(put(root / "orig/ec.c", k_driver));
  gate::IntegrityInput in;
  in.original = root / "orig";
  in.candidate = ctx.tree;
  in.diagnostics = {d, diag(k_driver, ".ops = {", "'struct acpi_driver' has no member named 'ops'"),
                    diag(k_driver, ".drv.pm", "'struct acpi_driver' has no member named 'drv'"),
                    diag(k_driver, "module_acpi_driver(", "implicit declaration of function 'module_acpi_driver'")};
  auto ok = gate::check_integrity(in);
  EXPECT_TRUE(ok.ok) << gate::to_json(ok).dump(1);
  // A conversion that drops the notify callback on the way is caught.
  std::string dropped = *after;
  dropped.replace(dropped.find("\tec_notify(data, event);\n"), 24, "");
  ASSERT_TRUE(put(ctx.tree / "ec.c", dropped));
  auto bad = gate::check_integrity(in);
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(std::any_of(bad.violations.begin(), bad.violations.end(), [](const auto& v) {
    return v.rule == "ops-assignment-removed";
  })) << gate::to_json(bad).dump(1);

  // Without any kernel driver that made the conversion there is nothing to learn.
  fs::remove_all(root / "new/drivers");
  fs::remove_all(root / "old/drivers");
  ASSERT_TRUE(put(ctx.tree / "ec.c", k_driver));
  EXPECT_TRUE(propose::make_struct_convert()->propose({d}, ctx).empty());
}
