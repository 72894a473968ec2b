#pragma once
// Internals of the integrity gate shared by integrity_gate.cpp and integrity_rules.cpp:
// one changed file with its diff, the cross-file context, and the per-file rule runners.

#include "autodriver/csrc/scan.hpp"
#include "autodriver/gate/integrity.hpp"

#include <set>
#include <string>
#include <vector>

namespace autodriver::gate::integrity {

/// One change block of `diff -U0`: lines [o_first, o_first+o_count) of the original became
/// [c_first, c_first+c_count) of the candidate. A zero count means a pure insertion/deletion
/// before line o_first / c_first.
struct Block {
  int o_first = 1, o_count = 0, c_first = 1, c_count = 0;
};

struct FilePair {
  std::string rel;
  bool in_original = false, in_candidate = false;
  std::string original_text, candidate_text;
  csrc::ScannedFile o, c;
  std::vector<Block> blocks;
  std::vector<int> o_to_c;  ///< [o line] -> candidate line for unchanged lines, 0 for removed ones
  std::vector<int> o_block; ///< [o line] -> index of the block that removed it, -1 if unchanged

  void build_line_map();
  /// Where an original line is (or was, if removed) in the candidate.
  int candidate_line(int o_line) const;
};

class Context {
public:
  Context(const IntegrityInput& in, IntegrityReport& report);
  void add(const std::string& rule, const std::string& file, int line, std::string detail);
  void note_candidate_functions(const csrc::ScannedFile& f);
  /// After every file's candidate functions are noted: the driver functions `f`'s original names
  /// on a line a diagnostic points at or that names a symbol whose API changed (a callback
  /// handed to a changed registration, `setup_timer(&t, fn, d)` -> `timer_setup(&t, fn, 0)`).
  void note_passed_functions(const FilePair& f);

  const IntegrityInput& in;
  IntegrityReport& report;
  std::set<std::string> removed;        ///< removed_symbols
  std::set<std::string> diag_idents;    ///< identifiers every diagnostic names (symbols, quoted text)
  std::set<std::string> diag_functions; ///< "In function 'x'" of every diagnostic
  /// Symbol-like words of the diagnostics about the whole module (modpost: "uses symbol s from
  /// namespace NS, but does not import it"): a file-scope line naming one answers them.
  std::set<std::string> module_words;
  std::set<std::string> candidate_functions; ///< functions defined anywhere in the candidate
  /// Functions passed on a diagnosed or changed-API line of any file: their definitions and
  /// prototypes may change in every file (the retyped callback's prototype in a header).
  std::set<std::string> passed_functions;
  /// Driver-local feature macros (`#ifdef HAVE_X` ... `#else`) whose undefined branch holds a
  /// diagnosed line: a `#define` of one switches to the maintainers' other implementation.
  std::set<std::string> feature_switches;
};

bool is_c_source(const std::string& rel);
bool is_makefile(const std::string& rel);

void check_c_file(Context& ctx, const FilePair& f);
void check_makefile(Context& ctx, const FilePair& f);

} // namespace autodriver::gate::integrity
