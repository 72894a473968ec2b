#include "autodriver/gate/repro.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/memo.hpp"
#include "autodriver/util/sandbox.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <memory>

namespace autodriver::gate {

namespace fs = std::filesystem;

static util::Expected<std::string> compile_static(const fs::path& src, const fs::path& scratch) {
  std::error_code ec;
  fs::create_directories(scratch, ec);
  const fs::path out = scratch / "ad-repro";
  // Compiled from a copy in the scratch folder, the sandbox's only folder of the user's: the
  // unprivileged uid a root caller's sandbox runs as may not read the user's own folders.
  const fs::path copy = scratch / "ad-repro.c";
  if (auto c = util::copy_file(src, copy); !c) return util::unexpected(c.error());
  util::RunRequest req;
  req.argv = {"gcc", "-static", "-O2", "-pthread", "-o", out.string(), copy.string()};
  req.cwd = scratch;
  req.timeout = std::chrono::seconds(120);
  req.stderr_mode = util::Stderr::merge;
  if (auto s = util::sandbox_request(req, {{}, {}, {scratch}, {}}); !s) return util::unexpected(s.error());
  auto r = util::run(req);
  if (!r) return util::unexpected(r.error());
  if (!r->ok())
    return util::unexpected(util::ErrorKind::config,
                            fmt::format("--repro {}: does not compile with gcc -static{}: {}", src.string(),
                                        r->timed_out ? " (timed out)" : "", util::tail_capped(r->out, 600)));
  return util::read_file(out);
}

util::Expected<ReproProgram> prepare_repro(const std::string& repro, const fs::path& scratch) {
  std::error_code ec;
  const fs::path p = fs::absolute(repro, ec);
  if (!ec && fs::is_regular_file(p, ec)) {
    if (p.extension() == ".c") {
      // Compiled once per process for the same source text (a repair boots it many times).
      auto text = util::read_file(p);
      if (!text) return util::unexpected(text.error());
      static util::Memo<std::shared_ptr<util::Expected<std::string>>> compiled;
      auto bin = compiled.get(p.string() + '\0' + *text,
                              [&] { return std::make_shared<util::Expected<std::string>>(compile_static(p, scratch)); });
      if (!*bin) return util::unexpected(bin->error());
      return ReproProgram{"c", **bin, true};
    }
    auto bytes = util::read_file(p);
    if (!bytes) return util::unexpected(bytes.error());
    if (bytes->starts_with("\x7f"
                           "ELF")) {
      if (bytes->find("/lib64/ld-linux") != std::string::npos || bytes->find("/lib/ld-linux") != std::string::npos)
        return util::unexpected(util::ErrorKind::config,
                                fmt::format("--repro {}: a dynamically linked executable cannot run in the guest (no libc "
                                            "there): link it statically, or give the C file",
                                            repro));
      return ReproProgram{"executable", std::move(*bytes), true};
    }
    return ReproProgram{"script", std::move(*bytes), false};
  }
  // Something that names a file that is not there is a mistake, not a command.
  if (repro.find(' ') == std::string::npos &&
      (repro.ends_with(".c") || repro.ends_with(".sh") || repro.find('/') != std::string::npos))
    return util::unexpected(util::ErrorKind::config, fmt::format("--repro {}: no such file", repro));
  return ReproProgram{"command", "#!/bin/sh\n" + repro + "\n", false};
}

} // namespace autodriver::gate
