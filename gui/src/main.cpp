// loom-dash: the live dashboard of a Loom run (docs/dashboard.md).
//   loom-dash --attach RUN_DIR|HOST:PORT [--token T]   a run's metrics stream (`loom run --listen`);
//                                                 the token from the run directory, --token or
//                                                 LOOM_METRICS_TOKEN
//   loom-dash --replay runs/NAME/metrics.jsonl    a metrics file, followed while it grows
//   loom-dash RECIPE [--set k=v ...]              train the recipe in-process
//   --screenshot FILE.png [--frames N] [--layout FILE.json]: render N frames, save the window, exit
// GLFW + OpenGL 3 + Dear ImGui (Debian's libimgui-dev; its GLFW/OpenGL3 backends are compiled
// from the sources Debian ships, see gui/CMakeLists.txt).
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.hpp"
#include "dashboard.hpp"
#include "file_follower.hpp"
#include "files/atomic_file.hpp"
#include "in_process_run.hpp"
#include "recipe/errors.hpp"
#include "png_file.hpp"
#include "stream_client.hpp"

namespace {

struct Arguments {
  std::string attach, token, replay, screenshot, layout, font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  int frames = 30, width = 1600, height = 1000;
  loom::cli::RecipeArguments recipe;
  loom::cli::GlobalOptions plugins;
};

std::unique_ptr<loom::dash::RunSource> open_source(const Arguments& args) {
  if (!args.attach.empty()) return std::make_unique<loom::dash::StreamClient>(args.attach, args.token);
  if (!args.replay.empty()) return std::make_unique<loom::dash::FileFollower>(args.replay);
  return std::make_unique<loom::dash::InProcessRun>(args.plugins, args.recipe);
}

// The framebuffer as top-to-bottom RGB rows (OpenGL reads bottom-up).
loom::dash::RgbImage read_framebuffer(int width, int height) {
  loom::dash::RgbImage image;
  image.width = width, image.height = height;
  std::vector<uint8_t> bottom_up(static_cast<size_t>(width) * height * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, bottom_up.data());
  image.pixels.resize(bottom_up.size());
  const size_t row = static_cast<size_t>(width) * 3;
  for (int y = 0; y < height; ++y)
    std::copy_n(bottom_up.data() + static_cast<size_t>(height - 1 - y) * row, row, image.pixels.data() + y * row);
  return image;
}

void write_layout(const std::string& path, const loom::dash::Dashboard& dashboard, int width, int height,
                  float scale_x, float scale_y) {
  nlohmann::json plots = nlohmann::json::array();
  for (const auto& placed : dashboard.placed_plots())
    plots.push_back({{"title", placed.title},
                     {"x0", static_cast<int>(placed.area.min.x * scale_x)},
                     {"y0", static_cast<int>(placed.area.min.y * scale_y)},
                     {"x1", static_cast<int>(placed.area.max.x * scale_x)},
                     {"y1", static_cast<int>(placed.area.max.y * scale_y)}});
  loom::host::write_file_atomically(path,
                                    nlohmann::json{{"width", width}, {"height", height}, {"plots", plots}}.dump(2) + "\n");
}

int run_window(const Arguments& args) {
  glfwSetErrorCallback([](int code, const char* text) { std::cerr << "GLFW error " << code << ": " << text << "\n"; });
  if (glfwInit() == GLFW_FALSE) {
    std::cerr << "loom-dash: cannot open a window (no display? set DISPLAY, or use xvfb-run)\n";
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  GLFWwindow* window = glfwCreateWindow(args.width, args.height, "loom-dash", nullptr, nullptr);
  if (window == nullptr) {
    std::cerr << "loom-dash: no OpenGL 3 context (install Mesa: libgl1-mesa-dri, libglx-mesa0)\n";
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(args.screenshot.empty() ? 1 : 0);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  if (std::filesystem::exists(args.font)) io.Fonts->AddFontFromFileTTF(args.font.c_str(), 15.0f);
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  int status = 0;
  {
    std::unique_ptr<loom::dash::RunSource> source = open_source(args);
    loom::dash::Dashboard dashboard(*source);
    if (!args.screenshot.empty()) dashboard.disable_hover();
    const auto start = std::chrono::steady_clock::now();
    auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    int frames_left = args.frames;
    std::vector<double> frame_ms;  // the frames counted for --screenshot
    std::string last_status;
    while (!glfwWindowShouldClose(window)) {
      const double frame_start = now();
      // Interactive: redraw on input or ten times a second. Screenshots: about 60 frames a second, so
      // --frames N also means N/60 seconds of a live source.
      glfwWaitEventsTimeout(args.screenshot.empty() ? 0.1 : 1.0 / 60);
      dashboard.update(now());
      if (std::string status = source->status(); status != last_status) {  // the log says what the window says
        std::cerr << "loom-dash: " << status << "\n";
        last_status = std::move(status);
      }
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      dashboard.draw(now());
      ImGui::Render();
      int fb_width = 0, fb_height = 0;
      glfwGetFramebufferSize(window, &fb_width, &fb_height);
      glViewport(0, 0, fb_width, fb_height);
      glClearColor(0.08f, 0.08f, 0.1f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      // A replay counts its frames once the file is read, so the picture holds the whole run.
      const bool counting = source->caught_up() || now() > 20;
      if (counting) frame_ms.push_back(1e3 * (now() - frame_start));
      if (!args.screenshot.empty() && counting && --frames_left <= 0) {
        loom::dash::write_png(args.screenshot, read_framebuffer(fb_width, fb_height));
        int win_width = 0, win_height = 0;
        glfwGetWindowSize(window, &win_width, &win_height);
        if (!args.layout.empty())
          write_layout(args.layout, dashboard, fb_width, fb_height, static_cast<float>(fb_width) / win_width,
                       static_cast<float>(fb_height) / win_height);
        std::sort(frame_ms.begin(), frame_ms.end());
        std::cerr << fmt::format("loom-dash: wrote {} ({}x{}, {} records; median frame {:.1f} ms, slowest {:.1f} ms "
                                 "over {} frames)\n",
                                 args.screenshot, fb_width, fb_height, dashboard.history().records,
                                 frame_ms[frame_ms.size() / 2], frame_ms.back(), frame_ms.size());
        break;
      }
      glfwSwapBuffers(window);
    }
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  CLI::App app{"loom-dash: live dashboard of a Loom run (loss, loss scale, throughput; run controls)"};
  auto* attach = app.add_option("--attach", args.attach,
                                "a run's metrics stream (loom run --listen): its run directory, runs/NAME (the "
                                "token is read there), or HOST:PORT");
  app.add_option("--token", args.token,
                 "the stream's token when it cannot be read from the run directory (default: LOOM_METRICS_TOKEN)")
      ->needs(attach);
  auto* replay = app.add_option("--replay", args.replay, "a metrics.jsonl, followed while it grows");
  auto* recipe = app.add_option("recipe", args.recipe.recipe, "a recipe to train in-process");
  app.add_option("--set", args.recipe.overrides, "override a recipe value (with RECIPE)")->needs(recipe);
  loom::cli::add_plugin_flags(app, args.plugins);
  attach->excludes(replay)->excludes(recipe);
  replay->excludes(recipe);
  auto* screenshot = app.add_option("--screenshot", args.screenshot, "render, save the window as this PNG and exit");
  app.add_option("--frames", args.frames, "frames rendered before --screenshot, about 60 a second (default 30)")->needs(screenshot);
  app.add_option("--layout", args.layout, "with --screenshot: write each plot's pixel rectangle as JSON")
      ->needs(screenshot);
  app.add_option("--width", args.width, "window width (default 1600)");
  app.add_option("--height", args.height, "window height (default 1000)");
  app.add_option("--font", args.font, "a TrueType font (default DejaVu Sans, ImGui's own when absent)");
  CLI11_PARSE(app, argc, argv);
  if (args.attach.empty() && args.replay.empty() && args.recipe.recipe.empty()) {
    std::cerr << "loom-dash: give --attach RUN_DIR|HOST:PORT, --replay FILE or a RECIPE (see --help)\n";
    return 2;
  }
  if (const char* token = std::getenv("LOOM_METRICS_TOKEN"); args.token.empty() && token != nullptr) args.token = token;
  try {
    return run_window(args);
  } catch (const loom::host::RecipeError& e) {
    std::cerr << "loom-dash: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "loom-dash: " << e.what() << "\n";
    return 1;
  }
}
