package suite

import "encoding/json"

func planQuest(raw json.RawMessage) (*casePlan, error) {
	return nil, errParams("quest: builder not written yet")
}
