#include "reports/judges.h"

namespace cmax::reports {

// Declarations of the judges in judges/ (one line each).
void FindingsJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void TasksJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void ExpectationsJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void FleetJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void JudgeInventoryUniformity(const RunData& data, std::vector<v1::RuleResult>* out);
void ComputeJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void JudgeAuditDrift(const RunData& data, std::vector<v1::RuleResult>* out);
void JudgeConsistency(const RunData& data, std::vector<v1::RuleResult>* out);
void StorageJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void JudgeConnectivity(const RunData& data, std::vector<v1::RuleResult>* out);
void CollectiveJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void HealthChangeJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void BurninJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void NvlinkDomainJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void RdmaJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void BaselineJudge(const RunData& data, std::vector<v1::RuleResult>* out);

const std::vector<Judge>& AllJudges() {
  static const std::vector<Judge> judges = {
      &FindingsJudge,
      &TasksJudge,
      &ExpectationsJudge,
      &FleetJudge,
      &JudgeInventoryUniformity,
      &ComputeJudge,
      &JudgeAuditDrift,
      &JudgeConsistency,
      &StorageJudge,
      &JudgeConnectivity,
      &CollectiveJudge,
      &HealthChangeJudge,
      &BurninJudge,
      &NvlinkDomainJudge,
      &RdmaJudge,
      &BaselineJudge,
  };
  return judges;
}

}  // namespace cmax::reports
