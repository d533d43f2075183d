#include "trace_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "trace_test_dir.h"

namespace taot::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(TraceFileNamesTest, ThreeDigitsAndTheFormatsExtension) {
  EXPECT_EQ(TraceLayerFileName(0, TraceFormat::kCsv), "layer_000.csv");
  EXPECT_EQ(TraceLayerFileName(7, TraceFormat::kNpy), "layer_007.npy");
  EXPECT_EQ(TraceLayerFileName(999, TraceFormat::kNpy), "layer_999.npy");
}

TEST(TraceFileNamesTest, TheExtensionNamesTheFormat) {
  EXPECT_EQ(TraceFormatOfExtension("trace/layer_000.csv"), TraceFormat::kCsv);
  EXPECT_EQ(TraceFormatOfExtension("routing.npy"), TraceFormat::kNpy);
  EXPECT_FALSE(TraceFormatOfExtension("routing.NPY").has_value());
  EXPECT_FALSE(TraceFormatOfExtension("layer_000.csv.gz").has_value());
  EXPECT_FALSE(TraceFormatOfExtension("npy").has_value());
}

TEST(TraceFileNamesTest, WhatLooksMeantAsALayerFile) {
  EXPECT_TRUE(LooksLikeLayerFile("layer_000.csv"));
  EXPECT_TRUE(LooksLikeLayerFile("layer_0.npy"));  // meant as one, so refused by name later
  EXPECT_TRUE(LooksLikeLayerFile("layer_0001.npy"));
  EXPECT_FALSE(LooksLikeLayerFile("layer_000.txt"));
  EXPECT_FALSE(LooksLikeLayerFile("Layer_000.csv"));
  EXPECT_FALSE(LooksLikeLayerFile("README.md"));
  EXPECT_FALSE(LooksLikeLayerFile("routing.npy"));
}

TEST(TraceFileNamesTest, TheIndexIsExactlyThreeDigits) {
  EXPECT_EQ(LayerIndexOfFileName("layer_000.csv"), 0);
  EXPECT_EQ(LayerIndexOfFileName("layer_042.npy"), 42);
  EXPECT_FALSE(LayerIndexOfFileName("layer_0.csv").has_value());
  EXPECT_FALSE(LayerIndexOfFileName("layer_0001.csv").has_value());
  EXPECT_FALSE(LayerIndexOfFileName("layer_-01.csv").has_value());
  EXPECT_FALSE(LayerIndexOfFileName("layer_.csv").has_value());
}

class TraceFilesTest : public TraceTestDir {};

TEST_F(TraceFilesTest, FindsLayersInIndexOrderNamedAfterTheGivenDirectory) {
  for (const char* name : {"layer_002.npy", "layer_000.npy", "notes.txt", "layer_001.npy"}) WriteText(name, "");
  const auto files = FindLayerFiles(dir_);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const LayerFile& f = (*files)[size_t(i)];
    EXPECT_EQ(f.index, i);
    EXPECT_EQ(f.format, TraceFormat::kNpy);
    EXPECT_EQ(f.name, Path(TraceLayerFileName(i, TraceFormat::kNpy)));
    EXPECT_EQ(f.path, fs::path(Path(TraceLayerFileName(i, TraceFormat::kNpy))));
  }
}

TEST_F(TraceFilesTest, AFileIsAOneLayerTraceWhateverItsName) {
  WriteText("routing.csv", "");
  const auto files = FindLayerFiles(Path("routing.csv"));
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].index, 0);
  EXPECT_EQ((*files)[0].format, TraceFormat::kCsv);
  EXPECT_EQ((*files)[0].name, Path("routing.csv"));
}

TEST_F(TraceFilesTest, AFileWithAnotherExtensionIsRefused) {
  WriteText("routing.json", "");
  const absl::Status s = FindLayerFiles(Path("routing.json")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), Path("routing.json") + ": a trace file must end in .csv or .npy");
}

TEST_F(TraceFilesTest, TheFirstMissingLayerIsNamedInTheTracesFormat) {
  WriteText("layer_000.npy", "");
  WriteText("layer_001.npy", "");
  WriteText("layer_003.npy", "");
  EXPECT_EQ(FindLayerFiles(dir_).status().message(),
            dir_ +
                ": layer_002.npy is missing (layer files are numbered consecutively from "
                "layer_000; found layer_003.npy)");
}

TEST_F(TraceFilesTest, ALayerInBothFormatsIsAMix) {
  WriteText("layer_000.csv", "");
  WriteText("layer_000.npy", "");
  EXPECT_EQ(FindLayerFiles(dir_).status().message(),
            dir_ +
                ": mixes formats (layer_000.csv and layer_000.npy); every layer file must be "
                "CSV or every one NPY");
}

TEST_F(TraceFilesTest, ABadlyNumberedLayerIsNamed) {
  WriteText("layer_000.csv", "");
  WriteText("layer_1.csv", "");
  const absl::Status s = FindLayerFiles(dir_).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), Path("layer_1.csv") +
                             ": layer files are named layer_NNN.csv or layer_NNN.npy (three "
                             "digits, zero-padded, from layer_000)");
}

TEST_F(TraceFilesTest, PreparingCreatesNestedDirectories) {
  const std::string target = Path("a/b/trace");
  EXPECT_TRUE(PrepareTraceDirectory(target).ok());
  EXPECT_TRUE(fs::is_directory(target));
  // Files that are not layers do not stand in the way, and preparing twice is fine.
  WriteText("a/b/trace/README", "from run 42");
  EXPECT_TRUE(PrepareTraceDirectory(target).ok());
}

TEST_F(TraceFilesTest, PreparingRefusesADirectoryHoldingLayersNamingTheFirst) {
  WriteText("layer_004.npy", "");
  WriteText("layer_002.csv", "");
  WriteText("layer_x.csv", "");
  const absl::Status s = PrepareTraceDirectory(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), Path("layer_002.csv") +
                             " already exists; WriteTrace does not overwrite a trace (write to a "
                             "new or empty directory)");
}

TEST_F(TraceFilesTest, PreparingRefusesAFile) {
  WriteText("file", "");
  const absl::Status s = PrepareTraceDirectory(Path("file"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(Path("file") + ": cannot create the trace directory"));
}

}  // namespace
}  // namespace taot::sim
