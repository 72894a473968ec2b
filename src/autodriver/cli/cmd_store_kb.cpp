// `autodriver kb export|import FILE`: the run store's knowledge base of solved diagnostics as
// scrubbed, versioned bundles (registered on the `kb` command beside the compat KB's subcommands).

#include "autodriver/cli/commands.hpp"
#include "autodriver/store/kb.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"

#include <fmt/format.h>

namespace autodriver::cli {

namespace fs = std::filesystem;

std::function<int()> setup_kb_store(CLI::App& kb) {
  auto export_file = std::make_shared<fs::path>();
  auto signature = std::make_shared<std::string>();
  auto import_file = std::make_shared<fs::path>();
  auto* exp = kb.add_subcommand("export", "Write the run store's solved-diagnostic entries to a scrubbed bundle "
                                          "(no absolute paths, user or host names, keys)");
  exp->add_option("file", *export_file, "Bundle to write (JSON)")->required();
  exp->add_option("--signature", *signature, "Only entries with this diagnostic signature");
  auto* imp = kb.add_subcommand("import", "Add a bundle's entries to the run store (data only: nothing in it is run)");
  imp->add_option("file", *import_file, "Bundle to read")->required()->check(CLI::ExistingFile);
  return [=]() -> int {
    if (!exp->parsed() && !imp->parsed()) return -1;
    fs::path path = store_path_option().empty() ? store::default_store_path() : store_path_option();
    auto st = store::RunStore::open(path);
    if (!st) throw util::FatalError{st.error()};
    if (exp->parsed()) {
      auto entries = store::kb_entries(*st, *signature);
      if (!entries) throw util::FatalError{entries.error()};
      if (auto w = util::write_file_atomic(*export_file,
                                           store::export_kb_bundle(*entries).dump(2, ' ', false, util::json_bytes) + "\n");
          !w)
        throw util::FatalError{w.error()};
      fmt::print("{} entr{} written to {}\n", entries->size(), entries->size() == 1 ? "y" : "ies", export_file->string());
      return k_exit_ok;
    }
    auto text = util::read_file(*import_file);
    if (!text) throw util::FatalError{text.error()};
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded())
      throw util::FatalError{util::make_error(util::ErrorKind::parse, fmt::format("{}: not JSON", import_file->string()))};
    auto n = store::import_kb_bundle(*st, j, import_file->filename().string());
    if (!n)
      throw util::FatalError{util::make_error(n.error().kind, fmt::format("{}: {}", import_file->string(), n.error().message))};
    fmt::print("{} new entr{} imported from {}\n", *n, *n == 1 ? "y" : "ies", import_file->string());
    return k_exit_ok;
  };
}

} // namespace autodriver::cli
