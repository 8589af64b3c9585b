#include "economics/cost/catalog.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::cost {
namespace {

// The first offer "PROVIDER/GPU[/TIER]" names: the cheapest per GPU-hour of resolve_offers().
const Offer& first_offer(const Catalog& catalog, std::string_view text) {
  return *resolve_offers(catalog, text).front();
}

// The CatalogError message `action` throws; "" (and a test failure) when it throws nothing.
std::string ErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const CatalogError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CatalogError thrown";
  return "";
}

std::string YamlError(const std::string& yaml) {
  return ErrorOf([&] { parse_catalog_yaml(yaml, "t.yaml"); });
}

// A valid offer with one line replaced or added: `extra` goes after the source line (line 7).
//   1 offers:
//   2   - provider: p
//   3     gpu: H100
//   4     tier: spot
//   5     usd_per_gpu_hour: 2
//   6     source: s
std::string OneOffer(const std::string& extra, const std::string& tier_line = "    tier: spot\n",
                     const std::string& price_line = "    usd_per_gpu_hour: 2\n") {
  return "offers:\n  - provider: p\n    gpu: H100\n" + tier_line + price_line + "    source: s\n" +
         extra;
}

const Offer* FindOffer(const Catalog& catalog, const std::string& provider, const std::string& gpu,
                       const std::string& tier) {
  for (const Offer& offer : catalog.offers) {
    if (offer.provider == provider && offer.gpu == gpu && offer.tier == tier) return &offer;
  }
  return nullptr;
}

std::string GpuName(const Catalog& catalog, const std::string& device_name) {
  const Gpu* gpu = find_gpu(catalog, device_name);
  return gpu == nullptr ? "(none)" : gpu->name;
}

// A fresh folder under the system temporary folder, removed with its contents afterwards.
class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("ftbench_catalog_" + std::to_string(::getpid()) + "_" + test->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to `relative` (folders created) and returns the full path.
  std::string Write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

// A SkyPilot v5+ style catalog: quoted GpuInfo cells with commas and doubled quotes, a CPU row,
// a fractional-GPU row, two zones of one region, a PCIe instance sold as "H100".
const char kSkyPilotCsv[] =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,"
    "SpotPrice\n"                                                                   // 1
    "m5.large,,,2.0,8.0,0.096,us-east-1,,0.04\n"                                    // 2
    "p4de.24xlarge,A100-80GB,8.0,96.0,1152.0,40.9657,us-east-1,"                    // 3
    "\"{'Gpus': [{'Name': 'A100-80GB', 'Manufacturer': 'NVIDIA', 'Count': 8.0}], "  //
    "\"\"TotalGpuMemoryInMiB\"\": 655360}\",12.5\n"                                 //
    "g4dn.xlarge,T4,1.0,4.0,16.0,0.526,us-east-1,\"{'Gpus': [{'Name': 'T4',\n"      // 4
    "'Count': 1.0}]}\",\n"                                                          // 5
    "frac.small,A10,0.5,6.0,30.0,0.75,us-east-1,,\n"                                // 6
    "p5.48xlarge,H100,8.0,192.0,2048.0,98.32,us-west-2,,40\n"                       // 7
    "p5.48xlarge,H100,8.0,192.0,2048.0,98.32,us-west-2,,32\n"                       // 8
    "gpu_1x_h100_pcie,H100,1,26.0,200.0,2.49,us-east-1,,\n"                         // 9
    "x1.gpu,MI300X,1,8,64,,us-east-1,,\n";                                          // 10

// ---- Billing -----------------------------------------------------------------------------------

TEST(CatalogBilling, NamesParseAndIncrements) {
  EXPECT_EQ(to_string(Billing::kPerSecond), "per-second");
  EXPECT_EQ(to_string(Billing::kPerMinute), "per-minute");
  EXPECT_EQ(to_string(Billing::kPerHour), "per-hour");
  EXPECT_EQ(to_string(Billing::kUnknown), "unknown");
  EXPECT_EQ(parse_billing("per-second"), Billing::kPerSecond);
  EXPECT_EQ(parse_billing("Per-Minute"), Billing::kPerMinute);
  EXPECT_EQ(parse_billing("PER-HOUR"), Billing::kPerHour);
  EXPECT_EQ(parse_billing("unknown"), Billing::kUnknown);
  EXPECT_EQ(parse_billing("minute"), std::nullopt);
  EXPECT_EQ(parse_billing(""), std::nullopt);
  EXPECT_EQ(increment_seconds(Billing::kPerSecond), 1);
  EXPECT_EQ(increment_seconds(Billing::kPerMinute), 60);
  EXPECT_EQ(increment_seconds(Billing::kPerHour), 3600);
  EXPECT_EQ(increment_seconds(Billing::kUnknown), 1);
}

// ---- Dates -------------------------------------------------------------------------------------

TEST(CatalogDate, ParsesValidDates) {
  const std::optional<Date> date = parse_date("2026-09-13");
  ASSERT_TRUE(date.has_value());
  EXPECT_EQ(date->year, 2026);
  EXPECT_EQ(date->month, 9);
  EXPECT_EQ(date->day, 13);
  EXPECT_EQ(to_string(*date), "2026-09-13");
  EXPECT_EQ(to_string(Date{99, 1, 5}), "0099-01-05");
  EXPECT_TRUE(parse_date("2026-12-31").has_value());
  EXPECT_TRUE(parse_date("2026-04-30").has_value());
}

TEST(CatalogDate, LeapYears) {
  EXPECT_TRUE(parse_date("2024-02-29").has_value());   // divisible by 4
  EXPECT_FALSE(parse_date("2026-02-29").has_value());  // not
  EXPECT_FALSE(parse_date("1900-02-29").has_value());  // by 100, not by 400
  EXPECT_TRUE(parse_date("2000-02-29").has_value());   // by 400
  EXPECT_FALSE(parse_date("2024-02-30").has_value());
}

TEST(CatalogDate, RejectsInvalidDates) {
  for (const char* text : {"2026-13-01", "2026-00-10", "2026-04-31", "2026-09-00", "2026-9-13",
                           "26-09-13", "2026-09-13 ", " 2026-09-13", "20260913", "2026/09/13",
                           "13-09-2026", "2026-09-1x", "+026-09-13", ""}) {
    EXPECT_FALSE(parse_date(text).has_value()) << text;
  }
}

TEST(CatalogDate, DaysSinceEpoch) {
  EXPECT_EQ(days_since_epoch(Date{1970, 1, 1}), 0);
  EXPECT_EQ(days_since_epoch(Date{1969, 12, 31}), -1);
  EXPECT_EQ(days_since_epoch(Date{2000, 2, 29}), 11016);
  EXPECT_EQ(days_since_epoch(Date{2000, 3, 1}), 11017);
  EXPECT_EQ(days_since_epoch(Date{2026, 9, 13}), 20709);
  EXPECT_EQ(days_since_epoch(Date{1600, 3, 1}), -135080);
  EXPECT_EQ(days_since_epoch(Date{1, 1, 1}), -719162);
}

TEST(CatalogDate, AgeDays) {
  Offer offer;
  EXPECT_EQ(age_days(offer, Date{2026, 10, 1}), std::nullopt);  // undated
  offer.date = Date{2026, 9, 13};
  EXPECT_EQ(age_days(offer, Date{2026, 9, 13}), 0);
  EXPECT_EQ(age_days(offer, Date{2026, 10, 13}), 30);
  EXPECT_EQ(age_days(offer, Date{2027, 9, 13}), 365);
  EXPECT_EQ(age_days(offer, Date{2026, 9, 12}), -1);  // dated after "today"
  offer.date = Date{2024, 2, 28};
  EXPECT_EQ(age_days(offer, Date{2024, 3, 1}), 2);  // across a leap day
}

// ---- The built-in catalog
// ------------------------------------------------------------------------

TEST(CatalogBuiltin, HasTheDatasheetFigures) {
  const Catalog c = builtin_catalog();
  ASSERT_EQ(c.gpus.size(), 5u);

  const Gpu* a100 = find_gpu(c, "A100-SXM-80GB");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->vendor, "nvidia");
  EXPECT_EQ(a100->memory_gb, 80.0);
  EXPECT_EQ(a100->memory_type, "HBM2e");
  EXPECT_EQ(a100->bandwidth_tb_per_second, 2.0);
  EXPECT_EQ(a100->dense_bf16_tflops, 312.0);
  EXPECT_EQ(a100->dense_fp16_tflops, 312.0);
  EXPECT_EQ(a100->dense_fp8_tflops, std::nullopt);

  const Gpu* h100 = find_gpu(c, "H100-SXM");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->name, "H100-SXM");
  EXPECT_EQ(h100->memory_gb, 80.0);
  EXPECT_EQ(h100->memory_type, "HBM3");
  EXPECT_EQ(h100->bandwidth_tb_per_second, 3.35);
  EXPECT_EQ(h100->dense_bf16_tflops, 989.0);
  EXPECT_EQ(h100->dense_fp16_tflops, 989.0);
  EXPECT_EQ(h100->dense_fp8_tflops, 1979.0);
  EXPECT_EQ(h100->origin.rfind("configs/gpus.yaml (built in):", 0), 0u) << h100->origin;

  const Gpu* h200 = find_gpu(c, "H200-SXM");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->memory_gb, 141.0);
  EXPECT_EQ(h200->memory_type, "HBM3e");
  EXPECT_EQ(h200->bandwidth_tb_per_second, 4.8);
  EXPECT_EQ(h200->dense_bf16_tflops, 989.0);
  EXPECT_EQ(h200->dense_fp16_tflops, 989.0);
  EXPECT_EQ(h200->dense_fp8_tflops, 1979.0);

  const Gpu* b200 = find_gpu(c, "B200");
  ASSERT_NE(b200, nullptr);
  EXPECT_EQ(b200->memory_gb, 192.0);
  EXPECT_EQ(b200->memory_type, "HBM3e");
  EXPECT_EQ(b200->bandwidth_tb_per_second, 8.0);
  EXPECT_EQ(b200->dense_bf16_tflops, 2250.0);
  EXPECT_EQ(b200->dense_fp16_tflops, 2250.0);
  EXPECT_EQ(b200->dense_fp8_tflops, std::nullopt);  // not given by the sources

  const Gpu* mi300x = find_gpu(c, "MI300X");
  ASSERT_NE(mi300x, nullptr);
  EXPECT_EQ(mi300x->vendor, "amd");
  EXPECT_EQ(mi300x->memory_gb, 192.0);
  EXPECT_EQ(mi300x->memory_type, "HBM3");
  EXPECT_EQ(mi300x->bandwidth_tb_per_second, 5.3);
  EXPECT_EQ(mi300x->dense_bf16_tflops, 1307.4);
  EXPECT_EQ(mi300x->dense_fp16_tflops, 1307.4);
  EXPECT_EQ(mi300x->dense_fp8_tflops, 2614.9);

  for (const Gpu& gpu : c.gpus) EXPECT_FALSE(gpu.source.empty()) << gpu.name;
}

TEST(CatalogBuiltin, ReferenceRunPrices) {
  const Catalog c = builtin_catalog();
  const Offer& h100 = first_offer(c, "reference-run/H100");
  EXPECT_EQ(h100.gpu, "H100-SXM");
  EXPECT_EQ(h100.tier, "on-demand");
  EXPECT_EQ(h100.usd_per_gpu_hour, 2.97);
  EXPECT_EQ(h100.price_basis, "per-gpu");
  EXPECT_EQ(h100.gpus_per_instance, 1);
  EXPECT_EQ(h100.billing, Billing::kPerMinute);
  EXPECT_EQ(h100.min_billed_seconds, 0);
  ASSERT_TRUE(h100.date.has_value());
  EXPECT_EQ(to_string(*h100.date), "2026-09-13");
  EXPECT_FALSE(h100.source.empty());

  const Offer& mi300x = first_offer(c, "reference-run/MI300X");
  EXPECT_EQ(mi300x.gpu, "MI300X");
  EXPECT_EQ(mi300x.tier, "on-demand");
  EXPECT_EQ(mi300x.usd_per_gpu_hour, 2.39);
  EXPECT_EQ(mi300x.billing, Billing::kPerMinute);  // inferred from $1.35 for 34 min; see note
  ASSERT_TRUE(mi300x.date.has_value());
  EXPECT_EQ(to_string(*mi300x.date), "2026-09-13");
  EXPECT_NE(mi300x.note.find("implies per-minute"), std::string::npos) << mi300x.note;
}

TEST(CatalogBuiltin, Mi300xWeekRange) {
  const Catalog c = builtin_catalog();
  const Offer& low = first_offer(c, "mi300x-range-low/MI300X");
  EXPECT_EQ(low.usd_per_gpu_hour, 1.71);
  EXPECT_EQ(low.billing, Billing::kUnknown);
  EXPECT_NE(low.note.find("quote-only"), std::string::npos);
  EXPECT_EQ(to_string(*low.date), "2026-09-13");
  const Offer& high = first_offer(c, "mi300x-range-high/MI300X");
  EXPECT_EQ(high.usd_per_gpu_hour, 6.00);
  EXPECT_EQ(to_string(*high.date), "2026-09-13");
}

TEST(CatalogBuiltin, TierExamplesAreUndatedWithUnknownBilling) {
  const Catalog c = builtin_catalog();
  ASSERT_EQ(c.offers.size(), 11u);
  const Offer* cluster_spot = FindOffer(c, "example-8gpu-cluster", "H100-SXM", "spot");
  ASSERT_NE(cluster_spot, nullptr);
  EXPECT_EQ(cluster_spot->gpus_per_instance, 8);
  EXPECT_EQ(cluster_spot->usd_per_gpu_hour, 2.89);
  EXPECT_EQ(cluster_spot->price_basis, "per-gpu");
  // Both tiers of the cluster match: on-demand wins although spot is cheaper.
  const Offer& cluster = first_offer(c, "example-8gpu-cluster/H100");
  EXPECT_EQ(cluster.tier, "on-demand");
  EXPECT_EQ(cluster.usd_per_gpu_hour, 4.49);

  int dated = 0;
  for (const Offer& offer : c.offers) {
    EXPECT_FALSE(offer.source.empty()) << offer.origin;
    if (offer.date) {
      ++dated;
      EXPECT_EQ(to_string(*offer.date), "2026-09-13") << offer.origin;
    } else {
      EXPECT_EQ(offer.billing, Billing::kUnknown) << offer.origin;
      EXPECT_EQ(offer.gpu, "H100-SXM") << offer.origin;  // "H100" in the file: the alias
    }
  }
  EXPECT_EQ(dated, 4);
  EXPECT_TRUE(c.providers.empty());
}

TEST(CatalogBuiltin, OffersForH100CheapestFirst) {
  const Catalog c = builtin_catalog();
  std::vector<double> prices;
  std::vector<std::string> tiers;
  for (const Offer* offer : offers_for(c, find_gpu(c, "H100"))) {
    prices.push_back(offer->usd_per_gpu_hour);
    tiers.push_back(offer->tier);
  }
  EXPECT_EQ(prices, (std::vector<double>{1.80, 2.40, 2.50, 2.89, 2.97, 4.49, 4.50, 5.99}));
  EXPECT_EQ(tiers, (std::vector<std::string>{"marketplace", "marketplace", "spot", "spot",
                                             "on-demand", "on-demand", "on-demand", "spot"}));
  EXPECT_EQ(offers_for(c, nullptr).size(), 11u);
  EXPECT_EQ(offers_for(c, nullptr).front()->usd_per_gpu_hour, 1.71);
}

// ---- find_gpu ----------------------------------------------------------------------------------

TEST(CatalogFindGpu, DriverNames) {
  const Catalog c = builtin_catalog();
  EXPECT_EQ(GpuName(c, "NVIDIA H100 80GB HBM3"), "H100-SXM");
  EXPECT_EQ(GpuName(c, "NVIDIA H200"), "H200-SXM");
  EXPECT_EQ(GpuName(c, "AMD Instinct MI300X"), "MI300X");
  EXPECT_EQ(GpuName(c, "NVIDIA A100-SXM4-80GB"), "A100-SXM-80GB");
  EXPECT_EQ(GpuName(c, "NVIDIA A100-SXM-80GB"), "A100-SXM-80GB");  // DGX A100 spelling
  EXPECT_EQ(GpuName(c, "NVIDIA B200"), "B200");
  EXPECT_EQ(GpuName(c, "AMD Instinct MI300X VF"), "MI300X");
}

TEST(CatalogFindGpu, CatalogAndSkyPilotNames) {
  const Catalog c = builtin_catalog();
  EXPECT_EQ(GpuName(c, "H100"), "H100-SXM");
  EXPECT_EQ(GpuName(c, "h100_sxm"), "H100-SXM");  // case, underscores, hyphens ignored
  EXPECT_EQ(GpuName(c, "H100SXM"), "H100-SXM");
  EXPECT_EQ(GpuName(c, "H100-MEGA"), "H100-SXM");
  EXPECT_EQ(GpuName(c, "A100-80GB"), "A100-SXM-80GB");
  EXPECT_EQ(GpuName(c, "A100-80GB-SXM"), "A100-SXM-80GB");
  EXPECT_EQ(GpuName(c, "MI300X"), "MI300X");
  EXPECT_EQ(GpuName(c, "H200"), "H200-SXM");
  EXPECT_EQ(GpuName(c, "B200"), "B200");
}

TEST(CatalogFindGpu, OtherPartsDoNotMatch) {
  const Catalog c = builtin_catalog();
  for (const char* name :
       {"NVIDIA H100 PCIe", "NVIDIA H100 NVL", "H100-NVL", "H100 PCIe", "NVIDIA A100-SXM4-40GB",
        "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "A100", "NVIDIA GH200 480GB",
        "NVIDIA H200 NVL", "AMD Instinct MI300A", "NVIDIA H800", "NVIDIA GB200", "", "  "}) {
    EXPECT_EQ(GpuName(c, name), "(none)") << name;
  }
}

TEST(CatalogFindGpu, LongestContainedAliasWins) {
  const Catalog c = parse_catalog_yaml(
      "gpus:\n"
      "  - name: X1\n"
      "    aliases: [\"Acme X\"]\n"
      "  - name: X1-Max\n"
      "    aliases: [\"Acme X Max\"]\n",
      "t.yaml");
  EXPECT_EQ(GpuName(c, "ACME X Max 96GB"), "X1-Max");
  EXPECT_EQ(GpuName(c, "ACME X 48GB"), "X1");
  EXPECT_EQ(GpuName(c, "ACME XMax"), "X1-Max");  // separators ignored across words
}

// ---- resolve_offers ----------------------------------------------------------------------------

TEST(CatalogResolve, ByAliasDeviceNameAndCase) {
  const Catalog c = builtin_catalog();
  EXPECT_EQ(first_offer(c, "reference-run/H100").usd_per_gpu_hour, 2.97);
  EXPECT_EQ(first_offer(c, "reference-run/NVIDIA H100 80GB HBM3").usd_per_gpu_hour, 2.97);
  EXPECT_EQ(first_offer(c, "Reference-Run/h100-sxm/On-Demand").usd_per_gpu_hour, 2.97);
  EXPECT_EQ(first_offer(c, "example-marketplace-low/H100/marketplace").usd_per_gpu_hour, 1.80);
  EXPECT_EQ(first_offer(c, "example-8gpu-cluster/H100/spot").usd_per_gpu_hour, 2.89);
}

TEST(CatalogResolve, SeveralMatchesGiveTheCheapestOnDemand) {
  const Catalog c = parse_catalog_yaml(
      "offers:\n"
      "  - {provider: cloud, gpu: G, tier: spot, usd_per_gpu_hour: 1.0, source: s}\n"
      "  - {provider: cloud, gpu: G, tier: on-demand, region: b, usd_per_gpu_hour: 3.0, "
      "source: s}\n"
      "  - {provider: cloud, gpu: G, tier: on-demand, region: a, usd_per_gpu_hour: 2.5, "
      "source: s}\n"
      "  - {provider: cloud, gpu: G, tier: on-demand, region: c, usd_per_gpu_hour: 2.5, "
      "source: s}\n"
      "  - {provider: spotty, gpu: G, tier: spot, region: b, usd_per_gpu_hour: 0.9, source: s}\n"
      "  - {provider: spotty, gpu: G, tier: spot, region: a, usd_per_gpu_hour: 0.8, source: s}\n",
      "t.yaml");
  const Offer& on_demand = first_offer(c, "cloud/G");
  EXPECT_EQ(on_demand.tier, "on-demand");
  EXPECT_EQ(on_demand.usd_per_gpu_hour, 2.5);
  EXPECT_EQ(on_demand.region, "a");  // tie on price: by region
  EXPECT_EQ(first_offer(c, "cloud/G/spot").usd_per_gpu_hour, 1.0);
  // No on-demand offer: the cheapest of the rest.
  EXPECT_EQ(first_offer(c, "spotty/G").region, "a");
  // Every match, for pricing to choose from by the run: the on-demand ones, cheapest first...
  const std::vector<const Offer*> all = resolve_offers(c, "cloud/G");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]->region, "a");
  EXPECT_EQ(all[1]->region, "c");
  EXPECT_EQ(all[2]->region, "b");
  // ...one tier when it is named, every tier when none is on demand.
  EXPECT_EQ(resolve_offers(c, "cloud/G/spot").size(), 1u);
  const std::vector<const Offer*> spot = resolve_offers(c, "spotty/G");
  ASSERT_EQ(spot.size(), 2u);
  EXPECT_EQ(spot[0]->region, "a");
}

TEST(CatalogResolve, ErrorsSuggestCloseNames) {
  const Catalog c = builtin_catalog();
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "referense-run/H100"); }),
            "offer \"referense-run/H100\": unknown provider \"referense-run\"; did you mean "
            "\"reference-run\"?");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "reference-run/MI300"); }),
            "offer \"reference-run/MI300\": unknown GPU \"MI300\" for \"reference-run\"; did you "
            "mean \"MI300X\"?");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "reference-run/B200"); }),
            "offer \"reference-run/B200\": \"reference-run\" has no offer for B200; it offers "
            "H100-SXM, MI300X");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "reference-run/H100/spto"); }),
            "offer \"reference-run/H100/spto\": tier: expected one of on-demand, spot, reserved, "
            "marketplace, found \"spto\"; did you mean \"spot\"?");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "reference-run/H100/spot"); }),
            "offer \"reference-run/H100/spot\": \"reference-run\" has no spot offer for H100-SXM; "
            "tiers offered: on-demand");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "H100"); }),
            "offer \"H100\": expected PROVIDER/GPU or PROVIDER/GPU/TIER");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "a//b"); }),
            "offer \"a//b\": expected PROVIDER/GPU or PROVIDER/GPU/TIER");
  EXPECT_EQ(ErrorOf([&] { first_offer(c, "a/b/c/d"); }),
            "offer \"a/b/c/d\": expected PROVIDER/GPU or PROVIDER/GPU/TIER");
}

// ---- YAML: what loads --------------------------------------------------------------------------

TEST(CatalogYaml, EmptyFileIsAnEmptyCatalog) {
  const Catalog c = parse_catalog_yaml("# nothing yet\n", "t.yaml");
  EXPECT_TRUE(c.gpus.empty());
  EXPECT_TRUE(c.offers.empty());
  EXPECT_TRUE(c.providers.empty());
}

TEST(CatalogYaml, EveryOfferField) {
  const Catalog c = parse_catalog_yaml(
      "providers:\n"
      "  - name: cloud\n"
      "    billing: per-second\n"
      "    min_billed_seconds: 60\n"
      "offers:\n"
      "  - provider: cloud\n"  // line 6
      "    gpu: H100\n"
      "    gpus_per_instance: 2\n"
      "    tier: reserved\n"
      "    usd_per_gpu_hour: 1.25\n"
      "    billing: per-hour\n"
      "    min_billed_seconds: 3600\n"
      "    region: eu-west-1\n"
      "    instance_type: big.2x\n"
      "    source: \"price page\"\n"
      "    date: 2026-02-28\n"
      "    note: \"1-year term\"\n",
      "t.yaml");
  ASSERT_EQ(c.offers.size(), 1u);
  const Offer& o = c.offers.front();
  EXPECT_EQ(o.provider, "cloud");
  EXPECT_EQ(o.gpu, "H100");  // no GPUs in this file: kept as given (merge() maps it)
  EXPECT_EQ(o.gpus_per_instance, 2);
  EXPECT_EQ(o.tier, "reserved");
  EXPECT_EQ(o.usd_per_gpu_hour, 1.25);
  EXPECT_EQ(o.price_basis, "per-gpu");
  EXPECT_EQ(o.billing, Billing::kPerHour);
  EXPECT_EQ(o.min_billed_seconds, 3600);
  EXPECT_EQ(o.region, "eu-west-1");
  EXPECT_EQ(o.instance_type, "big.2x");
  EXPECT_EQ(o.source, "price page");
  EXPECT_EQ(to_string(*o.date), "2026-02-28");
  EXPECT_EQ(o.note, "1-year term");
  EXPECT_EQ(o.origin, "t.yaml:6");
  ASSERT_EQ(c.providers.size(), 1u);
  EXPECT_EQ(c.providers[0].name, "cloud");
  EXPECT_EQ(c.providers[0].billing, Billing::kPerSecond);
  EXPECT_EQ(c.providers[0].min_billed_seconds, 60);
  EXPECT_EQ(c.providers[0].origin, "t.yaml:2");
}

TEST(CatalogYaml, PerInstancePriceIsDividedByGpusPerInstance) {
  const Catalog c = parse_catalog_yaml(
      "offers:\n"
      "  - {provider: p, gpu: G, gpus_per_instance: 8, tier: on-demand,\n"
      "     usd_per_instance_hour: 31.92, source: s}\n"
      "  - {provider: q, gpu: G, gpus_per_instance: 3, tier: on-demand,\n"
      "     usd_per_instance_hour: 10.5, source: s}\n",
      "t.yaml");
  ASSERT_EQ(c.offers.size(), 2u);
  EXPECT_EQ(c.offers[0].usd_per_gpu_hour, 3.99);  // 31.92 / 8: dividing by 2^3 is exact
  EXPECT_EQ(c.offers[0].price_basis, "per-instance");
  EXPECT_EQ(c.offers[1].usd_per_gpu_hour, 3.5);
  EXPECT_EQ(c.offers[1].price_basis, "per-instance");
}

TEST(CatalogYaml, OfferGpuAliasResolvesToTheFilesGpu) {
  const Catalog c = parse_catalog_yaml(
      "gpus:\n"
      "  - name: X1\n"
      "    aliases: [\"Acme X-One\"]\n"
      "    exclude_words: [PCIe]\n"
      "    vendor: acme\n"
      "offers:\n"
      "  - {provider: p, gpu: acme_x_one, tier: spot, usd_per_gpu_hour: 1, source: s}\n"
      "  - {provider: p, gpu: Acme X-One PCIe, tier: spot, usd_per_gpu_hour: 1, source: s}\n",
      "t.yaml");
  ASSERT_EQ(c.gpus.size(), 1u);
  EXPECT_EQ(c.gpus[0].aliases, (std::vector<std::string>{"Acme X-One"}));
  EXPECT_EQ(c.gpus[0].exclude_words, (std::vector<std::string>{"PCIe"}));
  EXPECT_EQ(c.gpus[0].source, "");  // no figures, no source needed
  EXPECT_EQ(c.offers[0].gpu, "X1");
  EXPECT_EQ(c.offers[1].gpu, "Acme X-One PCIe");
}

// ---- YAML: every kind of error, with its exact text -------------------------------------------

TEST(CatalogYaml, UnknownTierSuggests) {
  EXPECT_EQ(YamlError(OneOffer("", "    tier: spto\n")),
            "t.yaml:4: offers[0].tier: expected one of on-demand, spot, reserved, marketplace, "
            "found \"spto\"; did you mean \"spot\"?");
  EXPECT_EQ(YamlError(OneOffer("", "    tier: cheap\n")),
            "t.yaml:4: offers[0].tier: expected one of on-demand, spot, reserved, marketplace, "
            "found \"cheap\"");
}

TEST(CatalogYaml, UnknownBillingSuggests) {
  EXPECT_EQ(YamlError(OneOffer("    billing: per-minit\n")),
            "t.yaml:7: offers[0].billing: expected one of per-second, per-minute, per-hour, "
            "unknown, found \"per-minit\"; did you mean \"per-minute\"?");
}

TEST(CatalogYaml, UnknownKeysAndSections) {
  EXPECT_EQ(YamlError(OneOffer("    regoin: x\n")),
            "t.yaml:7: offers[0].regoin: unknown key \"regoin\"; did you mean \"region\"?");
  EXPECT_EQ(YamlError(OneOffer("    colour: red\n")),
            "t.yaml:7: offers[0].colour: unknown key \"colour\"; valid keys: provider, gpu, "
            "gpus_per_instance, tier, usd_per_gpu_hour, usd_per_instance_hour, billing, "
            "min_billed_seconds, region, instance_type, source, date, note, preemptions_per_hour");
  EXPECT_EQ(YamlError("gpu:\n  - name: X\n"),
            "t.yaml:1: gpu: unknown section \"gpu\"; did you mean \"gpus\"?");
  EXPECT_EQ(YamlError("gpus:\n  - name: X\n    dense_tflops: {bf16: 1, tf32: 2}\n    source: s\n"),
            "t.yaml:3: gpus[0].dense_tflops.tf32: unknown key \"tf32\"; valid keys: bf16, fp16, "
            "fp8");
}

TEST(CatalogYaml, MissingRequiredKeys) {
  EXPECT_EQ(YamlError("offers:\n  - note: x\n"),
            "t.yaml:2: offers[0]: missing required key \"provider\"\n"
            "t.yaml:2: offers[0]: missing required key \"gpu\"\n"
            "t.yaml:2: offers[0]: missing required key \"tier\"\n"
            "t.yaml:2: offers[0]: missing a price: give usd_per_gpu_hour or "
            "usd_per_instance_hour\n"
            "t.yaml:2: offers[0]: missing required key \"source\" (where the price comes from)");
  EXPECT_EQ(YamlError("gpus:\n  - vendor: x\n  - name: Y\n    memory_gb: 8\n"),
            "t.yaml:2: gpus[0]: missing required key \"name\"\n"
            "t.yaml:3: gpus[1]: missing required key \"source\" (where the figures come from)");
  EXPECT_EQ(YamlError("providers:\n  - billing: per-second\n"),
            "t.yaml:2: providers[0]: missing required key \"name\"");
  EXPECT_EQ(YamlError("offers:\n  - {provider: p, gpu: G, tier: spot, usd_per_gpu_hour: 1, "
                      "source: \"\"}\n"),
            "t.yaml:2: offers[0].source: expected a non-empty string, found \"\"");
}

TEST(CatalogYaml, WrongTypes) {
  EXPECT_EQ(YamlError(OneOffer("    gpus_per_instance: two\n")),
            "t.yaml:7: offers[0].gpus_per_instance: expected an integer, found \"two\"");
  EXPECT_EQ(YamlError(OneOffer("    gpus_per_instance: 2.5\n")),
            "t.yaml:7: offers[0].gpus_per_instance: expected an integer, found \"2.5\"");
  EXPECT_EQ(YamlError(OneOffer("", "    tier: spot\n", "    usd_per_gpu_hour: \"2.5\"\n")),
            "t.yaml:5: offers[0].usd_per_gpu_hour: expected a number, found the quoted string "
            "\"2.5\"");
  EXPECT_EQ(YamlError(OneOffer("", "    tier: spot\n", "    usd_per_gpu_hour: cheap\n")),
            "t.yaml:5: offers[0].usd_per_gpu_hour: expected a number, found \"cheap\"");
  EXPECT_EQ(YamlError(OneOffer("    region: [a, b]\n")),
            "t.yaml:7: offers[0].region: expected a string, found a list");
  EXPECT_EQ(YamlError(OneOffer("    note:\n")),
            "t.yaml:7: offers[0].note: expected a string, found null");
  EXPECT_EQ(YamlError("gpus:\n  - name: X\n    aliases: X1\n"),
            "t.yaml:3: gpus[0].aliases: expected a list of strings, found \"X1\"");
  EXPECT_EQ(YamlError("gpus:\n  - name: X\n    dense_tflops: 5\n    source: s\n"),
            "t.yaml:3: gpus[0].dense_tflops: expected a mapping of bf16, fp16, fp8, found \"5\"");
  EXPECT_EQ(YamlError("offers: {provider: p}\n"),
            "t.yaml:1: offers: expected a list, found a mapping");
  EXPECT_EQ(YamlError("offers:\n  - H100\n"),
            "t.yaml:2: offers[0]: expected a mapping, found \"H100\"");
  EXPECT_EQ(YamlError("- a\n- b\n"),
            "t.yaml:1: expected a mapping with keys gpus, providers, offers, found a list");
}

TEST(CatalogYaml, BadPrices) {
  const auto price_error = [](const std::string& value) {
    return YamlError(OneOffer("", "    tier: spot\n", "    usd_per_gpu_hour: " + value + "\n"));
  };
  const std::string prefix = "t.yaml:5: offers[0].usd_per_gpu_hour: expected a finite number > 0, ";
  EXPECT_EQ(price_error("0"), prefix + "found \"0\"");
  EXPECT_EQ(price_error("-1.5"), prefix + "found \"-1.5\"");
  EXPECT_EQ(price_error(".inf"), prefix + "found \".inf\"");
  EXPECT_EQ(price_error(".nan"), prefix + "found \".nan\"");
  EXPECT_EQ(price_error("1e999"), prefix + "found \"1e999\"");
  EXPECT_EQ(YamlError(OneOffer("", "    tier: spot\n", "    usd_per_instance_hour: -8\n")),
            "t.yaml:5: offers[0].usd_per_instance_hour: expected a finite number > 0, found "
            "\"-8\"");
  EXPECT_EQ(YamlError("gpus:\n  - {name: X, memory_gb: 0, source: s}\n"),
            "t.yaml:2: gpus[0].memory_gb: expected a finite number > 0, found \"0\"");
}

TEST(CatalogYaml, ExactlyOnePrice) {
  EXPECT_EQ(YamlError(OneOffer("    usd_per_instance_hour: 16\n")),
            "t.yaml:7: offers[0].usd_per_instance_hour: give either usd_per_gpu_hour or "
            "usd_per_instance_hour, not both");
  EXPECT_EQ(YamlError(OneOffer("", "    tier: spot\n", "")),
            "t.yaml:2: offers[0]: missing a price: give usd_per_gpu_hour or "
            "usd_per_instance_hour");
}

TEST(CatalogYaml, GpusPerInstanceAndMinimumBilled) {
  EXPECT_EQ(YamlError(OneOffer("    gpus_per_instance: 0\n")),
            "t.yaml:7: offers[0].gpus_per_instance: must be an integer >= 1, found 0");
  EXPECT_EQ(YamlError(OneOffer("    min_billed_seconds: -60\n")),
            "t.yaml:7: offers[0].min_billed_seconds: must be an integer >= 0, found -60");
}

TEST(CatalogYaml, BadDates) {
  const std::string prefix = "t.yaml:7: offers[0].date: expected a calendar date YYYY-MM-DD, ";
  EXPECT_EQ(YamlError(OneOffer("    date: 2026-02-29\n")), prefix + "found \"2026-02-29\"");
  EXPECT_EQ(YamlError(OneOffer("    date: 13/09/2026\n")), prefix + "found \"13/09/2026\"");
  EXPECT_EQ(YamlError(OneOffer("    date: 2026-9-13\n")), prefix + "found \"2026-9-13\"");
  EXPECT_EQ(YamlError(OneOffer("    date:\n")), prefix + "found null");
  EXPECT_NO_THROW(parse_catalog_yaml(OneOffer("    date: \"2024-02-29\"\n"), "t.yaml"));
}

TEST(CatalogYaml, DuplicateNames) {
  EXPECT_EQ(YamlError(OneOffer("", "    tier: spot\n", "    usd_per_gpu_hour: 2\n") +
                      "    source: \"\"\n"),
            "t.yaml:7: offers[0].source: duplicate key \"source\" (first given at line 6)");
  EXPECT_EQ(YamlError("gpus:\n  - name: X\n  - name: Y\n  - name: X\n"),
            "t.yaml:4: gpus[2].name: duplicate GPU \"X\" (first given at line 2)");
  EXPECT_EQ(YamlError("gpus:\n  - name: X-1\n  - name: x_1\n"),
            "t.yaml:3: gpus[1].name: GPU name \"x_1\" is the same as \"X-1\" (line 2) once case "
            "and punctuation are ignored");
  EXPECT_EQ(YamlError("gpus:\n  - name: X\n    aliases: [Ex]\n  - name: Y\n    aliases: [EX]\n"),
            "t.yaml:4: gpus[1].aliases: alias \"EX\" also names GPU \"X\" (line 2)");
  EXPECT_EQ(YamlError("providers:\n  - name: p\n  - name: p\n"),
            "t.yaml:3: providers[1].name: duplicate provider \"p\" (first given at line 2)");
  EXPECT_EQ(YamlError("offers:\n"
                      "  - {provider: p, gpu: G, tier: spot, usd_per_gpu_hour: 1, source: s}\n"
                      "  - {provider: p, gpu: G, tier: spot, usd_per_gpu_hour: 2, source: t}\n"),
            "t.yaml:3: offers[1]: same provider, gpu, tier, region, instance_type and "
            "gpus_per_instance as offers[0] (line 2)");
  EXPECT_EQ(YamlError("offers: []\noffers: []\n"),
            "t.yaml:2: offers: duplicate section \"offers\" (first given at line 1)");
}

TEST(CatalogYaml, AllProblemsReportedTogetherInLineOrder) {
  EXPECT_EQ(YamlError("gpus:\n"
                      "  - name: X\n"
                      "    memory_gb: lots\n"
                      "    source: s\n"
                      "offers:\n"
                      "  - provider: p\n"
                      "    gpu: X\n"
                      "    tierr: spot\n"
                      "    usd_per_gpu_hour: 0\n"
                      "    source: s\n"
                      "    date: yesterday\n"),
            "t.yaml:3: gpus[0].memory_gb: expected a number, found \"lots\"\n"
            "t.yaml:6: offers[0]: missing required key \"tier\"\n"
            "t.yaml:8: offers[0].tierr: unknown key \"tierr\"; did you mean \"tier\"?\n"
            "t.yaml:9: offers[0].usd_per_gpu_hour: expected a finite number > 0, found \"0\"\n"
            "t.yaml:11: offers[0].date: expected a calendar date YYYY-MM-DD, found "
            "\"yesterday\"");
}

TEST(CatalogYaml, InvalidYamlSyntax) {
  const std::string message = YamlError("offers:\n  - {provider: p\n");
  EXPECT_EQ(message.rfind("t.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find(": invalid YAML: "), std::string::npos) << message;
}

// ---- SkyPilot CSV ------------------------------------------------------------------------------

TEST(CatalogCsv, OnDemandAndSpotOffersPerGpu) {
  const Catalog known = builtin_catalog();
  SkyPilotCsvStats stats;
  const Catalog c = parse_skypilot_csv(kSkyPilotCsv, "aws/vms.csv", "aws", known, &stats);
  EXPECT_TRUE(c.gpus.empty());
  EXPECT_TRUE(c.providers.empty());

  const Offer* a100 = FindOffer(c, "aws", "A100-SXM-80GB", "on-demand");
  ASSERT_NE(a100, nullptr);  // "A100-80GB" mapped to the catalog name
  EXPECT_EQ(a100->usd_per_gpu_hour, 40.9657 / 8);
  EXPECT_EQ(a100->gpus_per_instance, 8);
  EXPECT_EQ(a100->price_basis, "per-instance");
  EXPECT_EQ(a100->region, "us-east-1");
  EXPECT_EQ(a100->instance_type, "p4de.24xlarge");
  EXPECT_EQ(a100->billing, Billing::kUnknown);
  EXPECT_EQ(a100->date, std::nullopt);
  EXPECT_EQ(a100->source, "SkyPilot catalog aws/vms.csv");
  EXPECT_EQ(a100->origin, "aws/vms.csv:3");
  const Offer* a100_spot = FindOffer(c, "aws", "A100-SXM-80GB", "spot");
  ASSERT_NE(a100_spot, nullptr);
  EXPECT_EQ(a100_spot->usd_per_gpu_hour, 1.5625);  // 12.5 / 8

  const Offer* t4 = FindOffer(c, "aws", "T4", "on-demand");  // unknown GPU: name kept
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ(t4->usd_per_gpu_hour, 0.526);
  EXPECT_EQ(t4->origin, "aws/vms.csv:4");                 // the quoted cell spans lines 4-5
  EXPECT_EQ(FindOffer(c, "aws", "T4", "spot"), nullptr);  // empty SpotPrice

  // Two zones of us-west-2: one spot offer, the cheaper; the on-demand rows are the same.
  const Offer* h100_spot = FindOffer(c, "aws", "H100-SXM", "spot");
  ASSERT_NE(h100_spot, nullptr);
  EXPECT_EQ(h100_spot->usd_per_gpu_hour, 4.0);  // 32 / 8
  EXPECT_EQ(h100_spot->origin, "aws/vms.csv:8");
  EXPECT_EQ(FindOffer(c, "aws", "H100-SXM", "on-demand")->usd_per_gpu_hour, 98.32 / 8);

  // SkyPilot calls Lambda's PCIe card "H100": kept apart from the SXM part.
  const Offer* pcie = FindOffer(c, "aws", "H100 PCIe", "on-demand");
  ASSERT_NE(pcie, nullptr);
  EXPECT_EQ(pcie->usd_per_gpu_hour, 2.49);
  EXPECT_EQ(pcie->note, "instance type gpu_1x_h100_pcie names PCIe: not H100-SXM");

  EXPECT_EQ(c.offers.size(), 6u);
  EXPECT_EQ(stats.rows, 8);
  EXPECT_EQ(stats.offers, 6);
  EXPECT_EQ(stats.skipped_no_accelerator, 1);
  EXPECT_EQ(stats.skipped_fractional_count, 1);
  EXPECT_EQ(stats.skipped_no_price, 1);
  EXPECT_EQ(stats.folded_duplicates, 2);
}

TEST(CatalogCsv, ColumnsByNameInAnyOrderAndCase) {
  const Catalog c = parse_skypilot_csv(
      "\xEF\xBB\xBFprice,acceleratorcount,Region,ACCELERATORNAME\r\n"
      "\"10\",2,\"eu\",MI300X\r\n"
      "\r\n",
      "x.csv", "x", builtin_catalog());
  ASSERT_EQ(c.offers.size(), 1u);
  EXPECT_EQ(c.offers[0].gpu, "MI300X");
  EXPECT_EQ(c.offers[0].tier, "on-demand");
  EXPECT_EQ(c.offers[0].usd_per_gpu_hour, 5.0);
  EXPECT_EQ(c.offers[0].region, "eu");
  EXPECT_EQ(c.offers[0].instance_type, "");
}

TEST(CatalogCsv, Errors) {
  const Catalog known = builtin_catalog();
  const auto csv_error = [&](const std::string& text) {
    return ErrorOf([&] { parse_skypilot_csv(text, "t.csv", "p", known); });
  };
  EXPECT_EQ(csv_error("AcceleratorName,AcceleratorCount,Prise\nH100,1,2\n"),
            "t.csv:1: missing required column Price (is \"Prise\" a misspelling of it?)");
  EXPECT_EQ(csv_error("InstanceType,Region\n"),
            "t.csv:1: missing required column AcceleratorName\n"
            "t.csv:1: missing required column AcceleratorCount\n"
            "t.csv:1: missing required column Price");
  EXPECT_EQ(csv_error(""),
            "t.csv:1: empty file: expected a header row with AcceleratorName, AcceleratorCount, "
            "Price");
  EXPECT_EQ(csv_error("AcceleratorName,AcceleratorCount,Price,SpotPrice\n"
                      "H100,1,abc,1\n"
                      "H100,eight,2,1\n"
                      "H100,1,2,-1\n"
                      "H100,1,2\n"),
            "t.csv:2: column Price: expected a finite number >= 0, found \"abc\"\n"
            "t.csv:3: column AcceleratorCount: expected a number, found \"eight\"\n"
            "t.csv:4: column SpotPrice: expected a finite number >= 0, found \"-1\"\n"
            "t.csv:5: expected 4 fields as in the header, found 3");
  EXPECT_EQ(csv_error("AcceleratorName,AcceleratorCount,Price,GpuInfo\n"
                      "H100,1,2,\"{'a': 1}\n"),
            "t.csv:2: quoted field not closed before the end of the file");
  EXPECT_EQ(csv_error("AcceleratorName,AcceleratorCount,Price,GpuInfo\n"
                      "H100,1,2,\"x\"y\n"),
            "t.csv:2: unexpected \"y\" after a closing quote in field 4");
  EXPECT_EQ(csv_error("AcceleratorName,AcceleratorCount,Price,price\n"),
            "t.csv:1: column \"price\" appears twice (fields 3 and 4)");
}

// Real rows of SkyPilot's GCP catalog (skypilot-org/skypilot-catalog, catalogs/v8/gcp/vms.csv,
// read 2026-12-06): GPU rows carry only the GPU's attach price and no instance type; the host VM
// is a row of its own per zone. H100-MEGA has no a3-megagpu-8g host in asia-northeast3.
const char kGcpCsv[] =
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
    "AvailabilityZone,Price,SpotPrice\n"                                         // 1
    "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-a,1.18251,0.36117\n"    // 2
    "a3-highgpu-8g,208.0,1872.0,,,,us-central1,us-central1-a,9.46006,2.88933\n"  // 3
    "a3-highgpu-8g,208.0,1872.0,,,,us-east4,us-east4-a,9.46006,2.15966\n"        // 4
    "a3-megagpu-8g,208.0,1872.0,,,,us-central1,us-central1-a,9.46006,2.88933\n"  // 5
    ",,,H100,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},us-central1,us-central1-a,"
    "4.20076,2.9926\n"  // 6
    ",,,H100,8,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},us-central1,us-central1-a,"
    "33.60609,23.9408\n"  // 7
    ",,,H100,8,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},us-east4,us-east4-a,"
    "78.37241,17.8848\n"  // 8
    ",,,H100-MEGA,8,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},asia-northeast3,"
    "asia-northeast3-a,35.39149,\n"  // 9
    ",,,H100-MEGA,8,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},us-central1,"
    "us-central1-a,82.75421,25.2808\n"                                    // 10
    ",,,tpu-v6e-8,1,tpu-v6e-8,us-central1,us-central1-a,21.6,4.35366\n";  // 11

std::vector<const Offer*> OffersOf(const Catalog& c, const std::string& gpu,
                                   const std::string& tier) {
  std::vector<const Offer*> found;
  for (const Offer& o : c.offers) {
    if (o.gpu == gpu && o.tier == tier) found.push_back(&o);
  }
  return found;
}

// GCP bills an H100 VM as the GPUs plus the a3 machine type they come in, as SkyPilot prices it
// (sky/catalog/gcp_catalog.py, list_accelerators): 8 x H100 in us-central1 is $33.61 + $9.46 =
// $43.07 an hour, not $33.61. a3-high and a3-mega stay two offers with their machine types.
TEST(CatalogCsv, GcpGpusArePricedWithTheirHostVm) {
  SkyPilotCsvStats stats;
  const Catalog c = parse_skypilot_csv(kGcpCsv, "gcp/vms.csv", "gcp", builtin_catalog(), &stats);

  const std::vector<const Offer*> on_demand = OffersOf(c, "H100-SXM", "on-demand");
  ASSERT_EQ(on_demand.size(), 3u);
  const auto with_instance = [&](const std::string& tier, const std::string& instance,
                                 int64_t gpus) -> const Offer* {
    for (const Offer* o : OffersOf(c, "H100-SXM", tier)) {
      if (o->instance_type == instance && o->gpus_per_instance == gpus) return o;
    }
    return nullptr;
  };
  const Offer* high8 = with_instance("on-demand", "a3-highgpu-8g", 8);
  ASSERT_NE(high8, nullptr);
  EXPECT_EQ(high8->usd_per_gpu_hour, (33.60609 + 9.46006) / 8);  // $43.07 per instance-hour
  EXPECT_EQ(high8->region, "us-central1");  // the cheaper of us-central1 and us-east4
  EXPECT_EQ(high8->origin, "gcp/vms.csv:7");
  EXPECT_EQ(high8->note, "GPU price plus host VM a3-highgpu-8g (gcp/vms.csv:3)");
  // Spot is cheapest in us-east4: $17.88 + $2.16 against $23.94 + $2.89.
  const Offer* high8_spot = with_instance("spot", "a3-highgpu-8g", 8);
  ASSERT_NE(high8_spot, nullptr);
  EXPECT_EQ(high8_spot->usd_per_gpu_hour, (17.8848 + 2.15966) / 8);
  EXPECT_EQ(high8_spot->region, "us-east4");

  const Offer* high1 = with_instance("on-demand", "a3-highgpu-1g", 1);
  ASSERT_NE(high1, nullptr);
  EXPECT_EQ(high1->usd_per_gpu_hour, 4.20076 + 1.18251);

  const Offer* mega = with_instance("on-demand", "a3-megagpu-8g", 8);
  ASSERT_NE(mega, nullptr);
  EXPECT_EQ(mega->usd_per_gpu_hour, (82.75421 + 9.46006) / 8);
  EXPECT_EQ(mega->region, "us-central1");
  ASSERT_NE(with_instance("spot", "a3-megagpu-8g", 8), nullptr);

  // A TPU's price is the TPU's own: no host VM.
  ASSERT_EQ(OffersOf(c, "tpu-v6e-8", "on-demand").size(), 1u);
  EXPECT_EQ(OffersOf(c, "tpu-v6e-8", "on-demand")[0]->usd_per_gpu_hour, 21.6);

  EXPECT_EQ(stats.rows, 10);
  EXPECT_EQ(stats.skipped_no_accelerator, 4);  // the host VM rows
  EXPECT_EQ(stats.skipped_no_host, 1);         // H100-MEGA in asia-northeast3
  EXPECT_EQ(stats.priced_with_host, 4);
  EXPECT_EQ(stats.offers, 8);
}

// Other GPUs ride an N1 VM: the cheapest of the zone with SkyPilot's vCPUs for the GPU and count
// (T4 x 1: 4) and 4 GiB per vCPU. The T4 row is real (catalogs/v8/gcp/vms.csv); the N1 prices
// are illustrative, in the file's format. n1-standard-4 (15 GiB) is too small, n1-standard-8
// dearer than n1-highmem-4.
TEST(CatalogCsv, GcpOtherGpusTakeTheCheapestN1VmThatFits) {
  SkyPilotCsvStats stats;
  const Catalog c = parse_skypilot_csv(
      "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
      "AvailabilityZone,Price,SpotPrice\n"
      "n1-standard-4,4.0,15.0,,,,us-central1,us-central1-a,0.19,0.04\n"
      "n1-highmem-4,4.0,26.0,,,,us-central1,us-central1-a,0.24,0.05\n"
      "n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.38,0.08\n"
      ",,,T4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},us-central1,us-central1-a,0.35,"
      "0.175\n"
      ",,,T4,3,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},us-central1,us-central1-a,1.05,"
      "0.525\n",
      "gcp/vms.csv", "gcp", builtin_catalog(), &stats);
  const std::vector<const Offer*> t4 = OffersOf(c, "T4", "on-demand");
  ASSERT_EQ(t4.size(), 1u);
  EXPECT_EQ(t4[0]->instance_type, "n1-highmem-4");
  EXPECT_EQ(t4[0]->usd_per_gpu_hour, 0.35 + 0.24);
  EXPECT_EQ(OffersOf(c, "T4", "spot")[0]->usd_per_gpu_hour, 0.175 + 0.05);
  EXPECT_EQ(stats.skipped_no_host, 1);  // 3 x T4: a count SkyPilot does not launch
}

// H100 NVL and PCIe cards, and the A100 80GB PCIe, are not the SXM parts: the row says so in its
// GpuInfo (RunPod), its instance type (Lambda) or its instance family (Azure's NC series). Real
// rows of catalogs/v6/azure/vms.csv and catalogs/v8/runpod/vms.csv, read 2026-12-06.
TEST(CatalogCsv, PcieAndNvlPartsAreNotTheSxmParts) {
  const Catalog known = builtin_catalog();
  const Catalog azure = parse_skypilot_csv(
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
      "Region,Generation\n"
      "Standard_NC24ads_A100_v4,A100-80GB,1,24.0,220,A100-80GB,3.673,0.444433,eastus,V2\n"
      "Standard_NC40ads_H100_v5,H100,1,40.0,320,H100,6.98,6.98,eastus,V2\n"
      "Standard_NC80adis_H100_v5,H100,2,80.0,640,H100,13.96,13.96,eastus,V2\n"
      "Standard_ND96amsr_A100_v4,A100-80GB,8,96.0,1800,A100-80GB,32.77,3.6047,eastus,V2\n",
      "azure/vms.csv", "azure", known);
  ASSERT_EQ(OffersOf(azure, "H100 NVL", "on-demand").size(), 2u);
  EXPECT_EQ(OffersOf(azure, "H100 NVL", "on-demand")[0]->note,
            "Azure's NC-series H100 v5 instances carry H100 NVL cards: not H100-SXM");
  ASSERT_EQ(OffersOf(azure, "A100-80GB PCIe", "on-demand").size(), 1u);
  EXPECT_EQ(OffersOf(azure, "A100-80GB PCIe", "on-demand")[0]->instance_type,
            "Standard_NC24ads_A100_v4");
  EXPECT_TRUE(OffersOf(azure, "H100-SXM", "on-demand").empty());
  ASSERT_EQ(OffersOf(azure, "A100-SXM-80GB", "on-demand").size(), 1u);  // ND: the SXM part
  EXPECT_EQ(OffersOf(azure, "A100-SXM-80GB", "on-demand")[0]->instance_type,
            "Standard_ND96amsr_A100_v4");

  const Catalog runpod = parse_skypilot_csv(
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Region,SpotPrice,Price,"
      "AvailabilityZone,GpuInfo\n"
      "1x_A100-80GB_SECURE,A100-80GB,1.0,8.0,117.0,IN,1.39,1.39,AP-IN-1,\"{'Gpus': [{'Name': "
      "'A100 PCIe', 'Manufacturer': 'Nvidia', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 80}}], "
      "'TotalGpuMemoryInMiB': 80}\"\n",
      "runpod/vms.csv", "runpod", known);
  ASSERT_EQ(runpod.offers.size(), 2u);
  EXPECT_EQ(runpod.offers[0].gpu, "A100-80GB PCIe");
  EXPECT_EQ(runpod.offers[0].note, "GpuInfo names A100 PCIe: not A100-SXM-80GB");
}

// One malformed column of a large file: the first problems with their lines, then a count, not
// one line per row.
TEST(CatalogCsv, ManyProblemsAreSummarised) {
  std::string text = "AcceleratorName,AcceleratorCount,Price\n";
  for (int i = 0; i < 30; ++i) text += "H100,1,N/A\n";
  text += "H100,1\n";
  std::string expected;
  for (int line = 2; line <= 11; ++line) {
    expected += "t.csv:" + std::to_string(line) +
                ": column Price: expected a finite number >= 0, found \"N/A\"\n";
  }
  expected +=
      "t.csv: 21 more problems on lines 12 to 32: 20 x column Price: expected a finite number "
      ">= 0; 1 x expected 3 fields as in the header";
  EXPECT_EQ(ErrorOf([&] { parse_skypilot_csv(text, "t.csv", "p", builtin_catalog()); }), expected);
}

// ---- Files, merging, loading
// ---------------------------------------------------------------------

TEST(CatalogFile, ProviderFromFolderStemOrSpec) {
  TempDir dir;
  const std::string csv = "AcceleratorName,AcceleratorCount,Price\nH100,8,24\n";
  const Catalog known = builtin_catalog();

  const Catalog aws = load_catalog_file(dir.Write("catalogs/aws/vms.csv", csv), known);
  ASSERT_EQ(aws.offers.size(), 1u);
  EXPECT_EQ(aws.offers[0].provider, "aws");
  EXPECT_EQ(aws.offers[0].gpu, "H100-SXM");
  EXPECT_EQ(aws.offers[0].usd_per_gpu_hour, 3.0);

  EXPECT_EQ(load_catalog_file(dir.Write("lambda.CSV", csv), known).offers[0].provider, "lambda");
  EXPECT_EQ(load_catalog_file("my-cloud=" + dir.Write("x/vms.csv", csv), known).offers[0].provider,
            "my-cloud");
}

// A file is read line by line, never whole: the same offers and origins as the text read in
// memory, with quoted cells spanning lines, CRLF records and blank lines on the way, and a line
// longer than a SkyPilot CSV holds refused with its number.
TEST(CatalogFile, CsvFilesAreReadAsTheirTextIs) {
  TempDir dir;
  std::string text =
      "\xEF\xBB\xBFInstanceType,AcceleratorName,AcceleratorCount,GpuInfo,Price,Region\r\n";
  for (int i = 0; i < 3000; ++i) {
    text += "p" + std::to_string(i % 7) +
            ".x,H100,8,\"{'Gpus': [{'Name': 'H100',\n'Count': 8}]}\"," +
            std::to_string(20 + i % 13) + ",r" + std::to_string(i % 5) + "\r\n";
    if (i % 100 == 0) text += "\n";
  }
  ASSERT_GT(text.size(), 150000u);  // more than two of the reader's 64 KiB chunks
  const Catalog known = builtin_catalog();
  const std::string path = dir.Write("aws/vms.csv", text);
  const Catalog from_file = load_catalog_file(path, known);
  const Catalog from_text = parse_skypilot_csv(text, path, "aws", known);
  ASSERT_EQ(from_file.offers.size(), 7u);
  ASSERT_EQ(from_file.offers.size(), from_text.offers.size());
  for (std::size_t i = 0; i < from_file.offers.size(); ++i) {
    EXPECT_EQ(from_file.offers[i].origin, from_text.offers[i].origin);
    EXPECT_EQ(from_file.offers[i].usd_per_gpu_hour, from_text.offers[i].usd_per_gpu_hour);
    EXPECT_EQ(from_file.offers[i].region, from_text.offers[i].region);
  }
  EXPECT_EQ(from_file.offers[0].origin, path + ":2");  // p0.x at $20: the first row
  EXPECT_EQ(from_file.offers[0].usd_per_gpu_hour, 2.5);

  const std::string wide = dir.Write("wide.csv", "AcceleratorName,AcceleratorCount,Price\nH100,1," +
                                                     std::string(2 * 1024 * 1024, '1') + "\n");
  EXPECT_EQ(ErrorOf([&] { load_catalog_file(wide, known); }),
            wide +
                ": cannot read file: line 2 is longer than 1 MiB; a line of a SkyPilot "
                "catalog holds at most that");
}

// Two offers of one file that name the same GPU of the catalog loaded before, once by its name
// and once by an alias, are the same offer: refused as two with the same name are, not merged
// into the later one.
TEST(CatalogFile, OffersNamingOneGpuByTwoNamesAreDuplicates) {
  TempDir dir;
  const std::string yaml = dir.Write(
      "dup.yaml",
      "offers:\n"
      "  - {provider: p, gpu: H100-SXM, tier: on-demand, usd_per_gpu_hour: 1, source: s}\n"
      "  - {provider: p, gpu: H100, tier: on-demand, usd_per_gpu_hour: 2, source: s}\n");
  EXPECT_EQ(ErrorOf([&] { load_catalog_file(yaml, builtin_catalog()); }),
            yaml +
                ":3: offers[1]: same provider, gpu, tier, region, instance_type and "
                "gpus_per_instance as offers[0] (line 2)");
  // Apart, each is an offer of its own GPU name: fine.
  const std::string one = dir.Write(
      "one.yaml",
      "offers:\n  - {provider: p, gpu: H100, tier: on-demand, usd_per_gpu_hour: 2, source: s}\n");
  ASSERT_EQ(load_catalog_file(one, builtin_catalog()).offers.size(), 1u);
}

// A GPU of a catalog file may not take a name that already stands for another GPU: `catalog`
// read the offers of the file by its own GPU while `cost` resolved the name to the one loaded
// first (found by a review).
TEST(CatalogFile, AGpuMayNotTakeANameOfAnotherGpu) {
  TempDir dir;
  const std::string alias = dir.Write(
      "alias.yaml",
      "gpus:\n  - {name: My-H100, aliases: [H100], vendor: nvidia}\n"
      "offers:\n  - {provider: p, gpu: H100, tier: on-demand, usd_per_gpu_hour: 2, source: s}\n");
  EXPECT_EQ(ErrorOf([&] { load_catalog_file(alias, builtin_catalog()); }),
            alias +
                ":2: gpus[0].aliases: alias \"H100\" already names GPU \"H100-SXM\" "
                "(configs/gpus.yaml (built in):26); a name stands for one GPU");
  const std::string name = dir.Write("name.yaml", "gpus:\n  - {name: h100 sxm5, vendor: nvidia}\n");
  EXPECT_EQ(ErrorOf([&] { load_catalog_file(name, builtin_catalog()); }),
            name +
                ":2: gpus[0].name: \"h100 sxm5\" already names GPU \"H100-SXM\" "
                "(configs/gpus.yaml (built in):26); a name stands for one GPU");
  // Restating a GPU under its own name, with its own aliases, is how a file corrects figures.
  const std::string same = dir.Write(
      "same.yaml", "gpus:\n  - {name: H100-SXM, aliases: [H100, Hopper], vendor: nvidia}\n");
  EXPECT_EQ(load_catalog_file(same, builtin_catalog()).gpus.size(), 1u);
}

TEST(CatalogFile, YamlFilesAndErrors) {
  TempDir dir;
  const std::string yaml = dir.Write(
      "mine.yaml",
      "offers:\n  - {provider: p, gpu: H100, tier: spot, usd_per_gpu_hour: 1, source: s}\n");
  const Catalog c = load_catalog_file(yaml, Catalog{});
  ASSERT_EQ(c.offers.size(), 1u);
  EXPECT_EQ(c.offers[0].origin, yaml + ":2");

  EXPECT_EQ(ErrorOf([&] { load_catalog_file("p=" + yaml, Catalog{}); }),
            "p=" + yaml +
                ": PROVIDER=PATH names the provider of a SkyPilot CSV (a .csv file); a YAML "
                "catalog names its providers itself");
  const std::string missing = dir.Write("x", "") + "-missing.yaml";
  EXPECT_EQ(ErrorOf([&] { load_catalog_file(missing, Catalog{}); }),
            missing + ": cannot read file: No such file or directory");
  const std::string bad = dir.Write("bad.yaml", "offers:\n  - {provider: p}\n");
  EXPECT_EQ(ErrorOf([&] { load_catalog_file(bad, Catalog{}); }).rfind(bad + ":2: offers[0]: ", 0),
            0u);
}

TEST(CatalogMerge, LaterWins) {
  Catalog into = parse_catalog_yaml(
      "gpus:\n  - {name: G, vendor: a}\n"
      "providers:\n  - {name: p, billing: per-hour}\n"
      "offers:\n"
      "  - {provider: p, gpu: G, tier: spot, usd_per_gpu_hour: 1, source: old}\n"
      "  - {provider: p, gpu: G, tier: on-demand, usd_per_gpu_hour: 2, source: old}\n",
      "a.yaml");
  Catalog later = parse_catalog_yaml(
      "gpus:\n  - {name: G, aliases: [Gee], vendor: b}\n  - {name: H}\n"
      "providers:\n  - {name: p, billing: per-second}\n"
      "offers:\n"
      "  - {provider: p, gpu: G, tier: spot, usd_per_gpu_hour: 0.5, source: new}\n"
      "  - {provider: p, gpu: G, tier: spot, region: r, usd_per_gpu_hour: 0.7, source: new}\n",
      "b.yaml");
  merge(into, std::move(later));

  ASSERT_EQ(into.gpus.size(), 2u);
  EXPECT_EQ(into.gpus[0].vendor, "b");
  EXPECT_EQ(into.gpus[1].name, "H");
  ASSERT_EQ(into.providers.size(), 1u);
  EXPECT_EQ(into.providers[0].billing, Billing::kPerSecond);
  ASSERT_EQ(into.offers.size(), 3u);
  EXPECT_EQ(into.offers[0].source, "new");  // same key: replaced in place
  EXPECT_EQ(into.offers[0].usd_per_gpu_hour, 0.5);
  EXPECT_EQ(into.offers[1].source, "old");
  EXPECT_EQ(into.offers[2].region, "r");  // another region: added

  // A later file naming a GPU by an alias of an earlier file's GPU replaces that offer too.
  merge(into, parse_catalog_yaml(
                  "offers:\n"
                  "  - {provider: p, gpu: gee, tier: spot, usd_per_gpu_hour: 0.4, source: alias}\n",
                  "c.yaml"));
  ASSERT_EQ(into.offers.size(), 3u);
  EXPECT_EQ(into.offers[0].gpu, "G");
  EXPECT_EQ(into.offers[0].source, "alias");
}

TEST(CatalogLoad, BuiltinThenFilesWithProviderDefaults) {
  TempDir dir;
  const std::string yaml =
      dir.Write("providers.yaml",
                "providers:\n"
                "  - {name: aws, billing: per-second, min_billed_seconds: 60}\n"
                "offers:\n"
                "  - {provider: aws, gpu: H100, tier: reserved, "
                "usd_per_gpu_hour: 2, billing: per-hour, source: s}\n");
  const std::string csv = dir.Write("aws/vms.csv",
                                    "InstanceType,AcceleratorName,AcceleratorCount,Price\n"
                                    "p4de.24xlarge,A100-80GB,8,40\n");
  const Catalog c = load_catalogs({yaml, csv});
  EXPECT_EQ(c.gpus.size(), 5u);
  EXPECT_EQ(c.offers.size(), 13u);

  const Offer* a100 = FindOffer(c, "aws", "A100-SXM-80GB", "on-demand");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->usd_per_gpu_hour, 5.0);
  EXPECT_EQ(a100->billing, Billing::kPerSecond);  // the provider's default
  EXPECT_EQ(a100->min_billed_seconds, 60);
  const Offer* reserved = FindOffer(c, "aws", "H100-SXM", "reserved");  // alias of a built-in
  ASSERT_NE(reserved, nullptr);
  EXPECT_EQ(reserved->billing, Billing::kPerHour);  // stated: kept
  EXPECT_EQ(reserved->min_billed_seconds, 0);
  // Offers of other providers keep unknown billing.
  EXPECT_EQ(FindOffer(c, "example-h100-spot", "H100-SXM", "spot")->billing, Billing::kUnknown);
}

}  // namespace
}  // namespace ftbench::cost

namespace ftbench::cost {
namespace {

// A spot offer may state its reclaim rate; any other tier may not, and the rate is bounded.
TEST(CatalogPreemptions, ASpotOfferMayStateItsReclaimRate) {
  const std::string head = "offers:\n  - {provider: p, gpu: H100, tier: ";
  const Catalog c = parse_catalog_yaml(
      head + "spot, usd_per_gpu_hour: 2, source: s, preemptions_per_hour: 0.25}\n", "t.yaml");
  ASSERT_EQ(c.offers.size(), 1u);
  EXPECT_EQ(c.offers[0].preemptions_per_hour, 0.25);
  const Catalog none =
      parse_catalog_yaml(head + "spot, usd_per_gpu_hour: 2, source: s}\n", "t.yaml");
  EXPECT_FALSE(none.offers[0].preemptions_per_hour);
  EXPECT_EQ(YamlError(head + "on-demand, usd_per_gpu_hour: 2, source: s, "
                             "preemptions_per_hour: 0.25}\n"),
            "t.yaml:2: offers[0].preemptions_per_hour: only a spot offer is reclaimed; this "
            "offer's tier is \"on-demand\"");
  EXPECT_EQ(YamlError(head + "spot, usd_per_gpu_hour: 2, source: s, preemptions_per_hour: 4000}\n"),
            "t.yaml:2: offers[0].preemptions_per_hour: expected reclaims per hour above 0 and at "
            "most 3600, found \"4000\"");
  EXPECT_NE(YamlError(head + "spot, usd_per_gpu_hour: 2, source: s, preemptions_per_hour: 0}\n")
                .find("preemptions_per_hour"),
            std::string::npos);
}

}  // namespace
}  // namespace ftbench::cost
