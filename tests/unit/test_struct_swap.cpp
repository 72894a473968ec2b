// struct-swap: a driver moved from one struct to its successor, members converted as the
// target's own bridge code converts them.

#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/propose/shared/struct_swap.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/strings.hpp"

#include <gtest/gtest.h>

using namespace autodriver::propose;
namespace util = autodriver::util;

namespace {

// Shaped like the target's net/ethtool/ioctl.c (eee_to_keee / keee_to_eee).
const char* k_bridge = R"(static void eee_to_keee(struct ethtool_keee *keee,
			const struct ethtool_eee *eee)
{
	keee->eee_enabled = eee->eee_enabled;
	ethtool_convert_legacy_u32_to_link_mode(keee->advertised,
						eee->advertised);
}

static void keee_to_eee(struct ethtool_eee *eee,
			const struct ethtool_keee *keee)
{
	eee->eee_active = keee->eee_active;
	ethtool_convert_link_mode_to_legacy_u32(&eee->supported, keee->supported);
	ethtool_convert_link_mode_to_legacy_u32(&eee->advertised,
						keee->advertised);
}
)";

std::map<std::string, MemberBridge> bridges() {
  auto b = learn_member_bridges(k_bridge, "ethtool_eee", "ethtool_keee");
  for (auto& [m, br] : b) br.scalar = "u32";
  return b;
}

} // namespace

TEST(StructSwap, BridgesLearnedFromTheTargetsConversionFunctions) {
  auto b = learn_member_bridges(k_bridge, "ethtool_eee", "ethtool_keee");
  ASSERT_EQ(b.size(), 2u); // advertised, supported; plain copies (eee_enabled) need nothing
  EXPECT_EQ(b["advertised"].into, "ethtool_convert_legacy_u32_to_link_mode");
  EXPECT_EQ(b["advertised"].out_of, "ethtool_convert_link_mode_to_legacy_u32");
  // `supported` was only read out of the new struct: the into direction of its sibling stands in.
  EXPECT_EQ(b["supported"].into, "ethtool_convert_legacy_u32_to_link_mode");
  EXPECT_TRUE(learn_member_bridges(k_bridge, "ethtool_cmd", "ethtool_keee").empty());
}

TEST(StructSwap, WritesGoThroughTheConverterAndReadsThroughALocal) {
  const std::string driver = R"(static int helper(struct usbnet *dev, struct ethtool_eee *data)
{
	int val = 3;

	data->supported = cap_to_sup(val);
	if (val)
		data->advertised = 0;
	return 0;
}

static int set(struct usbnet *dev, struct ethtool_eee *data)
{
	u16 tmp = adv_to_mmd(data->advertised);

	if (!!(data->advertised &
	       data->supported))
		tmp |= 1;
	data->advertised |= tmp;
	return tmp;
}

static void reset(struct usbnet *dev)
{
	struct ethtool_eee eee_data;

	helper(dev, &eee_data);
	eee_data.advertised = 0;
	while (eee_data.advertised)
		;
}
)";
  auto names = names_of_struct_type(driver, {"ethtool_eee", "ethtool_keee"});
  EXPECT_EQ(names, (std::set<std::string>{"data", "eee_data"}));
  auto out = swap_struct(driver, "ethtool_eee", "ethtool_keee", bridges(), names);
  auto has = [&](const std::string& text) { return out.find(text) != std::string::npos; };
  // Every object of the old type is of the new one.
  EXPECT_FALSE(has("struct ethtool_eee")) << out;
  EXPECT_TRUE(has("static int helper(struct usbnet *dev, struct ethtool_keee *data)")) << out;
  EXPECT_TRUE(has("\tstruct ethtool_keee eee_data;")) << out;
  // A write of a member whose representation changed goes through the bridge's converter.
  EXPECT_TRUE(has("ethtool_convert_legacy_u32_to_link_mode(data->supported, cap_to_sup(val));")) << out;
  EXPECT_TRUE(has("ethtool_convert_legacy_u32_to_link_mode(data->advertised, 0);")) << out;
  EXPECT_TRUE(has("ethtool_convert_legacy_u32_to_link_mode(eee_data.advertised, 0);")) << out;
  EXPECT_FALSE(has("data->advertised = ")) << out;
  EXPECT_FALSE(has("data->advertised |= ")) << out;
  // A compound write reads the old value through a local and writes the result back.
  EXPECT_TRUE(has("ethtool_convert_legacy_u32_to_link_mode(data->advertised, legacy_advertised | (tmp));")) << out;
  // Every read in an expression is of a u32 local declared in its function and filled by the
  // converter before the statement that reads it.
  auto lines = util::split_lines(out);
  for (std::string member : {"advertised", "supported"}) {
    const std::string local = "legacy_" + member;
    const std::string fill = "ethtool_convert_link_mode_to_legacy_u32(&" + local + ", data->" + member + ");";
    bool declared = false, filled = false;
    for (auto l : lines) {
      std::string line(l);
      if (line.starts_with("static ")) declared = filled = false; // a new function
      if (line == "\tu32 " + local + ";") {
        declared = true;
        continue;
      }
      if (line.find(fill) != std::string::npos) {
        filled = true;
        continue;
      }
      if (line.find(local) != std::string::npos && line.find("ethtool_convert_legacy_u32_to_link_mode(") == std::string::npos) {
        EXPECT_TRUE(declared && filled) << "read of " << local << " before it is filled: " << line << "\n" << out;
      }
    }
  }
  EXPECT_TRUE(has("u16 tmp = adv_to_mmd(legacy_advertised);")) << out;
  EXPECT_TRUE(has("if (!!(legacy_advertised &")) << out;
  EXPECT_TRUE(has("legacy_supported))")) << out;
  // What does not touch the members is left as it was; a read in a loop condition is left for the
  // build to reject.
  for (const char* kept : {"\tint val = 3;", "\thelper(dev, &eee_data);", "\twhile (eee_data.advertised)", "\treturn tmp;"})
    EXPECT_TRUE(has(kept)) << kept << "\n" << out;
}

TEST(StructSwap, LongConversionWrapsAfterTheFirstArgument) {
  const std::string driver = "static int get(struct net_device *n, struct ethtool_eee *edata)\n{\n"
                             "\tedata->supported = mmd_eee_cap_to_ethtool_sup_t(phy_data_from_the_hardware);\n"
                             "\treturn 0;\n}\n";
  auto out = swap_struct(driver, "ethtool_eee", "ethtool_keee", bridges(), {"edata"});
  EXPECT_NE(out.find("\tethtool_convert_legacy_u32_to_link_mode(edata->supported,\n"
                     "\t\t\t\t\t\tmmd_eee_cap_to_ethtool_sup_t(phy_data_from_the_hardware));\n"),
            std::string::npos)
      << out;
}

TEST(AdapterMacro, AttributeGroupsReadsAttrsAndDefinesGroups) {
  // Shaped like include/linux/sysfs.h.
  const std::string header = "#define __ATTRIBUTE_GROUPS(_name)\t\t\t\t\\\n"
                             "static const struct attribute_group *_name##_groups[] = {\t\\\n"
                             "\t&_name##_group,\t\t\t\t\t\t\\\n"
                             "\tNULL,\t\t\t\t\t\t\t\\\n"
                             "}\n\n"
                             "#define ATTRIBUTE_GROUPS(_name)\t\t\t\t\t\\\n"
                             "static const struct attribute_group _name##_group = {\t\t\\\n"
                             "\t.attrs = _name##_attrs,\t\t\t\t\t\\\n"
                             "};\t\t\t\t\t\t\t\t\\\n"
                             "__ATTRIBUTE_GROUPS(_name)\n\n"
                             "#define __ATTR_RO(_name) {\t\t\t\t\t\t\\\n"
                             "\t.attr\t= { .name = __stringify(_name), .mode = 0444 },\t\t\\\n"
                             "\t.show\t= _name##_show,\t\t\t\t\t\t\\\n"
                             "}\n";
  auto macros = adapter_macros(header);
  // __ATTRIBUTE_GROUPS adapts foo_group to foo_groups; __ATTR_RO defines nothing.
  ASSERT_EQ(macros.size(), 2u);
  const auto& m = macros[0].macro == "ATTRIBUTE_GROUPS" ? macros[0] : macros[1];
  EXPECT_EQ(m.macro, "ATTRIBUTE_GROUPS");
  EXPECT_EQ(m.in_suffix, "_attrs");
  EXPECT_EQ(m.out_suffix, "_groups");
  EXPECT_EQ(m.out_type, "const struct attribute_group **");
}

TEST(TargetDecls, ParameterTypeWithoutItsName) {
  EXPECT_EQ(param_type_only("const struct ktermios *old"), "const struct ktermios *");
  EXPECT_EQ(param_type_only("struct file *"), "struct file *");
  EXPECT_EQ(param_type_only("unsigned int"), "unsigned int");
  EXPECT_EQ(param_type_only("size_t count"), "size_t");
  EXPECT_EQ(param_type_only("struct dir_context"), "struct dir_context");
  EXPECT_EQ(param_type_only("u8 **buf"), "u8 **");
}
