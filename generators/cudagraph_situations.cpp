// The cudagraph situations (cudagraph_situations.h).
#include "generators/cudagraph_situations.h"

#include "framework/check/pass_properties.h"
#include "framework/check/pipeline.h"
#include "framework/exec/inputs.h"
#include "framework/ir/module.h"
#include "framework/ir/text.h"

namespace passcheck::gen {

const std::vector<CudagraphSituation>& cudagraph_situations() {
  static const std::vector<CudagraphSituation> situations{
      {"cudagraph guard data-dependent-scalar", R"(graph(param %w : f32[8, 8], arg %x : f32[4, 8]):
  %mm : f32[4, 8] = aten::mm(%x, %w)
  %sum : f32[] = aten::sum(%mm, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %mul : f32[4, 8] = aten::mul.Scalar(%mm, %item)
  %mm_1 : f32[4, 8] = aten::mm(%mul, %w)
  return (%mm_1, %sum))",
       "cudagraph", true},
      {"cudagraph guard data-dependent-shape", R"(graph(arg %x : f32[4]):
  %relu : f32[4] = aten::relu(%x)
  %nonzero : i64[2, 1] = aten::nonzero(%relu)
  %neg : i64[2, 1] = aten::neg(%nonzero)
  return (%neg))",
       "cudagraph", false},
      {"cudagraph guard symbolic-size", R"(symbol s0 in [2, 8] hint 4
graph(arg %x : f32[sym(s0), 4], arg %y : f32[4, 4]):
  %relu : f32[sym(s0), 4] = aten::relu(%x)
  %mm : f32[4, 4] = aten::mm(%y, %y)
  return (%relu, %mm))",
       "cudagraph", false},
      {"cudagraph guard host-device-copy", R"(graph(arg %d : f32[4]@cuda):
  %relu : f32[4]@cuda = aten::relu(%d)
  %down : f32[4] = aten::_to_copy(%relu, None, None, device("cpu"), None, False, None)
  return (%down))",
       "cudagraph{backend=cuda}", false},
      {"cudagraph guard host-only-op", R"(graph(arg %h : f32[4], arg %d : f32[4]@cuda):
  %relu : f32[4]@cuda = aten::relu(%d)
  %neg : f32[4] = aten::neg(%h)
  return (%relu, %neg))",
       "cudagraph{backend=cuda}", false},
      {"cudagraph guard mutates-copied-input", R"(graph(param %w : f32[8], arg %x : f32[8]):
  %mul : f32[8] = aten::mul.Tensor(%w, %w)
  %add_ : f32[8] = aten::add_.Tensor(%x, %mul, 1)
  %relu : f32[8] = aten::relu(%add_)
  return (%relu))",
       "cudagraph", true},
      {"cudagraph guard unsupported-input-kind", R"(graph(param %w : f32[8, 8], arg %x : f32[4, 8], arg %train : bool):
  %mm : f32[4, 8] = aten::mm(%x, %w)
  %nd : f32[4, 8], %mask : b8[4, 8] = aten::native_dropout(%mm, 0.0, %train)
  %mm_1 : f32[4, 8] = aten::mm(%nd, %w)
  return (%mm_1))",
       "cudagraph", true},
      {"cudagraph guard nothing-to-launch", R"(graph(arg %x : f32[4]):
  %sum : f32[] = aten::sum(%x, None)
  %item : float = aten::_local_scalar_dense(%sum)
  %view : f32[2, 2] = aten::view(%x, [2, 2])
  return (%item, %view))",
       "cudagraph", true},
  };
  return situations;
}

std::vector<std::string> cudagraph_situation_violations(const check::PassRegistry& registry) {
  std::vector<std::string> violations;
  for (const CudagraphSituation& s : cudagraph_situations()) {
    try {
      auto graph = ir::parse_graph(s.text, s.decision);
      if (s.executable) {
        std::vector<c10::IValue> inputs = exec::make_inputs(*graph);
        for (std::string& v : check::check_pass_properties(*graph, inputs, s.pipeline, registry).violations)
          violations.push_back(s.decision + ": " + v);
      } else {
        ir::Module module = ir::Module::of_graph(std::move(graph));
        check::Pipeline::parse(s.pipeline, registry).run(module);
      }
    } catch (const std::exception& e) {
      violations.push_back(s.decision + ": " + e.what());
    }
  }
  return violations;
}

}  // namespace passcheck::gen
